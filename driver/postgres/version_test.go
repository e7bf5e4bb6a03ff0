package postgres_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lockstep-queue/lockstep/driver/postgres"
)

// CheckVersion reads the three forms a server reports its version in and
// refuses anything older than PostgreSQL 12, saying what is needed.
func TestCheckVersionForms(t *testing.T) {
	for _, v := range []string{
		// SHOW server_version
		"12.0", "12.22", "15.19 (Debian 15.19-0+deb12u1)", "16.4", "17rc1", "18beta2", "13.16 (Ubuntu 13.16-1.pgdg22.04+1)",
		// SELECT version()
		"PostgreSQL 15.19 (Debian 15.19-0+deb12u1) on x86_64-pc-linux-gnu, compiled by gcc (Debian 12.2.0-14) 12.2.0, 64-bit",
		"PostgreSQL 12.20 on aarch64-unknown-linux-gnu",
		// SHOW server_version_num
		"120000", "150019", "170002", " 160004\n",
	} {
		require.NoError(t, postgres.CheckVersion(v), v)
	}
	for v, want := range map[string]string{
		"11.22":                   "postgres: PostgreSQL 11.22 is too old: lockstep needs 12 or later",
		"9.6.24":                  "postgres: PostgreSQL 9.6.24 is too old: lockstep needs 12 or later",
		"9.4.26":                  "postgres: PostgreSQL 9.4.26 is too old: lockstep needs 12 or later",
		"PostgreSQL 9.4.26":       "postgres: PostgreSQL 9.4.26 is too old: lockstep needs 12 or later",
		"PostgreSQL 10.23 on x86": "postgres: PostgreSQL 10.23 on x86 is too old: lockstep needs 12 or later",
		"90426":                   "postgres: PostgreSQL 90426 is too old: lockstep needs 12 or later",
		"110022":                  "postgres: PostgreSQL 110022 is too old: lockstep needs 12 or later",
		"100023":                  "postgres: PostgreSQL 100023 is too old: lockstep needs 12 or later",
		"8.4":                     "postgres: PostgreSQL 8.4 is too old: lockstep needs 12 or later",
		"":                        `postgres: cannot read server version ""`,
		"garbage":                 `postgres: cannot read server version "garbage"`,
		"PostgreSQL":              `postgres: cannot read server version "PostgreSQL"`,
		"99999999999999999999.1":  `postgres: cannot read server version "99999999999999999999.1"`,
	} {
		require.EqualError(t, postgres.CheckVersion(v), want, v)
	}
	require.Equal(t, 12, postgres.MinMajorVersion)
}
