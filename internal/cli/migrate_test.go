package cli

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lockstep-queue/lockstep/internal/dsn"
	"github.com/lockstep-queue/lockstep/migrate"
)

func TestMigrateUpStatusDown(t *testing.T) {
	dsn := "sqlite://" + filepath.Join(t.TempDir(), "q.db")

	code, out, errOut := runCLI(t, "--dsn", dsn, "migrate", "status")
	require.Equal(t, 0, code, errOut)
	require.Regexp(t, `(?m)^VERSION\s+NAME\s+STATE\s+APPLIED_AT$`, out)
	require.Regexp(t, `(?m)^0001\s+init\s+pending\s+-$`, out)
	require.Regexp(t, `(?m)^0002\s+queue_status\s+pending\s+-$`, out)
	require.Regexp(t, `(?m)^0003\s+job_features\s+pending\s+-$`, out)
	require.Regexp(t, `(?m)^0004\s+workflows\s+pending\s+-$`, out)
	require.Regexp(t, `(?m)^0005\s+limits\s+pending\s+-$`, out)
	require.Regexp(t, `(?m)^0006\s+processes\s+pending\s+-$`, out)

	code, out, errOut = runCLI(t, "--dsn", dsn, "migrate", "up")
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "applied  0001_init")
	require.Contains(t, out, "applied  0002_queue_status")
	require.Contains(t, out, "applied  0003_job_features")
	require.Contains(t, out, "applied  0004_workflows")
	require.Contains(t, out, "applied  0005_limits")
	require.Contains(t, out, "applied  0006_processes")
	require.Contains(t, out, "applied  0007_history")
	require.Contains(t, out, "schema is at version 7")

	code, out, errOut = runCLI(t, "--dsn", dsn, "migrate", "up")
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "schema is up to date (version 7)")

	code, out, errOut = runCLI(t, "--dsn", dsn, "migrate", "status")
	require.Equal(t, 0, code, errOut)
	// APPLIED_AT is "-" while migrate.Status cannot read SQLite's TEXT
	// applied_at (it expects a time.Time); a timestamp once it can.
	require.Regexp(t, `(?m)^0001\s+init\s+applied\s+(\d{4}-\d\d-\d\dT\S+|-)$`, out)

	code, out, errOut = runCLI(t, "--dsn", dsn, "migrate", "status", "--json")
	require.Equal(t, 0, code, errOut)
	var st []statusJSON
	require.NoError(t, json.Unmarshal([]byte(out), &st), out)
	require.Len(t, st, 7)
	require.Equal(t, 1, st[0].Version)
	require.Equal(t, "init", st[0].Name)
	require.True(t, st[0].Applied)
	require.Equal(t, 2, st[1].Version)
	require.True(t, st[1].Applied)
	require.Equal(t, 3, st[2].Version)
	require.True(t, st[2].Applied)
	require.Equal(t, 4, st[3].Version)
	require.True(t, st[3].Applied)
	require.Equal(t, 5, st[4].Version)
	require.Equal(t, "limits", st[4].Name)
	require.True(t, st[4].Applied)
	require.Equal(t, 6, st[5].Version)
	require.Equal(t, "processes", st[5].Name)
	require.True(t, st[5].Applied)
	require.Equal(t, 7, st[6].Version)
	require.Equal(t, "history", st[6].Name)
	require.True(t, st[5].Applied)

	// down reverts one migration at a time, newest first.
	code, out, errOut = runCLI(t, "--dsn", dsn, "migrate", "down")
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "reverted 0007_history")
	require.Contains(t, out, "schema is at version 6")
	code, out, errOut = runCLI(t, "--dsn", dsn, "migrate", "down")
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "reverted 0006_processes")
	require.Contains(t, out, "schema is at version 5")
	code, out, errOut = runCLI(t, "--dsn", dsn, "migrate", "down")
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "reverted 0005_limits")
	require.Contains(t, out, "schema is at version 4")
	code, out, errOut = runCLI(t, "--dsn", dsn, "migrate", "down")
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "reverted 0004_workflows")
	require.Contains(t, out, "schema is at version 3")
	code, out, errOut = runCLI(t, "--dsn", dsn, "migrate", "down")
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "reverted 0003_job_features")
	require.Contains(t, out, "schema is at version 2")
	code, out, errOut = runCLI(t, "--dsn", dsn, "migrate", "down")
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "reverted 0002_queue_status")
	require.Contains(t, out, "schema is at version 1")
	code, out, errOut = runCLI(t, "--dsn", dsn, "migrate", "down")
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "reverted 0001_init")
	require.Contains(t, out, "schema is at version 0")

	code, out, errOut = runCLI(t, "--dsn", dsn, "migrate", "status", "--json")
	require.Equal(t, 0, code, errOut)
	require.NoError(t, json.Unmarshal([]byte(out), &st), out)
	require.False(t, st[0].Applied)
	require.Nil(t, st[0].AppliedAt)
	require.False(t, st[1].Applied)
	require.False(t, st[2].Applied)
	require.False(t, st[3].Applied)
	require.False(t, st[4].Applied)
	require.False(t, st[5].Applied)

	code, out, errOut = runCLI(t, "--dsn", dsn, "migrate", "down", "--steps", "3")
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "nothing to revert")
}

func TestMigrateDownRefusesZeroSteps(t *testing.T) {
	dsn := "sqlite://" + filepath.Join(t.TempDir(), "q.db")
	code, out, errOut := runCLI(t, "--dsn", dsn, "migrate", "down", "--steps", "0")
	require.Equal(t, 1, code)
	require.Empty(t, out)
	require.Equal(t, "lockstep: --steps must be at least 1, got 0\n", errOut)
}

func TestMigratePrintNeedsNoDatabase(t *testing.T) {
	for _, dialect := range []string{"mysql", "mariadb", "postgres", "sqlite"} {
		t.Run(dialect, func(t *testing.T) {
			// The DSN names a server that does not exist: print must not connect.
			code, out, errOut := runCLI(t, "--dsn", "postgres://u:p@127.0.0.1:1/none", "migrate", "print", "--dialect", dialect)
			require.Equal(t, 0, code, errOut)
			require.Contains(t, out, "-- lockstep migration 0001_init (up)")
			require.Contains(t, out, "CREATE TABLE")
			require.Contains(t, out, "lockstep_jobs_claim")
			// Up migrations only: no down file's header. (SQLite's
			// workflows migration drops a table, the one it rebuilt.)
			require.NotContains(t, out, "(down)")

			code, out, errOut = runCLI(t, "migrate", "print", "--dialect", dialect, "--down")
			require.Equal(t, 0, code, errOut)
			require.Contains(t, out, "-- lockstep migration 0001_init (down)")
			require.Contains(t, out, "DROP TABLE")
		})
	}
	// The dialects differ.
	_, my, _ := runCLI(t, "migrate", "print", "--dialect", "mysql")
	_, pg, _ := runCLI(t, "migrate", "print", "--dialect", "postgres")
	_, lite, _ := runCLI(t, "migrate", "print", "--dialect", "sqlite")
	require.NotEqual(t, my, pg)
	require.NotEqual(t, pg, lite)
	require.Contains(t, strings.ToUpper(my), "ENGINE=INNODB")
}

func TestMigratePrintDialectFromDSN(t *testing.T) {
	code, out, errOut := runCLI(t, "--dsn", "sqlite:unused.db", "migrate", "print")
	require.Equal(t, 0, code, errOut)
	_, want, _ := runCLI(t, "migrate", "print", "--dialect", "sqlite")
	require.Equal(t, want, out)

	code, _, errOut = runCLI(t, "migrate", "print", "--dialect", "oracle")
	require.Equal(t, 1, code)
	require.Equal(t, "lockstep: unknown dialect \"oracle\": use mysql, postgres or sqlite\n", errOut)
}

// TestMigrateFailureShowsStatement: a migration the database refuses is
// reported on lines of their own: the migration, the statement's position
// in its file with its first line (not the whole statement flattened),
// the database's error, and what is left applied.
func TestMigrateFailureShowsStatement(t *testing.T) {
	for _, d := range schemaDialects() {
		t.Run(d.name, func(t *testing.T) {
			t.Parallel()
			url := d.dsn(t)
			drv, err := dsn.Open(context.Background(), url)
			require.NoError(t, err)
			t.Cleanup(func() { _ = drv.Close() })
			// A table of the same name as one a later migration creates.
			_, err = drv.DB().Exec("CREATE TABLE lockstep_queues (x INT)")
			require.NoError(t, err)

			code, out, errOut := runCLI(t, "--dsn", url, "migrate", "up")
			require.Equal(t, 1, code, out)
			require.Contains(t, out, "applied  0001_init")
			lines := strings.Split(strings.TrimSuffix(errOut, "\n"), "\n")
			require.GreaterOrEqual(t, len(lines), 4, errOut)
			require.Regexp(t, `^lockstep: migrate up: migration 000\d_job_features failed$`, lines[0])
			require.Regexp(t, `^  statement \d+ of \d+, line \d+ of 000\d_job_features\.up\.sql:$`, lines[1])
			require.Equal(t, "    CREATE TABLE lockstep_queues ( …", lines[2], "the first line of the statement, alone")
			require.True(t, strings.HasPrefix(lines[3], "  the database said: "), lines[3])
			require.Contains(t, strings.ToLower(lines[3]), "lockstep_queues")
			if d.name == "mariadb" {
				require.Regexp(t, `^  MySQL commits each schema change at once: statements 1 to \d+ of this migration stayed applied`, lines[4])
			} else {
				require.Equal(t, "  nothing of this migration was applied: its transaction was rolled back", lines[4])
			}
			for _, line := range lines {
				require.Less(t, len(line), 400, "no statement flattened into one line: %q", line)
				require.NotContains(t, line, "PRIMARY KEY", "only the statement's first line: %q", line)
			}
		})
	}
}

// TestMigratePrintAppliedByHand: the printed script, applied statement by
// statement to an empty database, leaves it as `migrate up` would: the
// same versions recorded, so `migrate status` says every migration is
// applied, `migrate up` has nothing to do and the commands work; on SQLite
// the schema is the same, table for table and index for index.
func TestMigratePrintAppliedByHand(t *testing.T) {
	for _, d := range schemaDialects() {
		t.Run(d.name, func(t *testing.T) {
			t.Parallel()
			url := d.dsn(t)
			drv, err := dsn.Open(context.Background(), url)
			require.NoError(t, err)
			t.Cleanup(func() { _ = drv.Close() })
			dialect := drv.Dialect()
			code, script, errOut := runCLI(t, "migrate", "print", "--dialect", dialect)
			require.Equal(t, 0, code, errOut)
			require.Contains(t, script, "CREATE TABLE IF NOT EXISTS lockstep_migrations")
			for _, stmt := range migrate.Split(script) {
				_, err := drv.DB().Exec(stmt)
				require.NoError(t, err, stmt)
			}

			code, out, errOut := runCLI(t, "--dsn", url, "migrate", "status", "--json")
			require.Equal(t, 0, code, errOut)
			var st []statusJSON
			require.NoError(t, json.Unmarshal([]byte(out), &st), out)
			require.NotEmpty(t, st)
			for _, s := range st {
				require.True(t, s.Applied, "%04d_%s", s.Version, s.Name)
			}
			code, out, errOut = runCLI(t, "--dsn", url, "migrate", "up")
			require.Equal(t, 0, code, errOut)
			require.Contains(t, out, "schema is up to date")
			code, out, errOut = runCLI(t, "--dsn", url, "enqueue", "k", `{"a":1}`)
			require.Equal(t, 0, code, errOut)
			require.Equal(t, "1\n", out)
			code, out, errOut = runCLI(t, "--dsn", url, "jobs", "show", "1")
			require.Equal(t, 0, code, errOut)
			require.Contains(t, out, "PENDING")

			// And --down, applied after, takes it all back and forgets it.
			code, down, errOut := runCLI(t, "migrate", "print", "--dialect", dialect, "--down")
			require.Equal(t, 0, code, errOut)
			for _, stmt := range migrate.Split(down) {
				_, err := drv.DB().Exec(stmt)
				require.NoError(t, err, stmt)
			}
			code, _, errOut = runCLI(t, "--dsn", url, "stats")
			require.Equal(t, 1, code)
			require.Contains(t, errOut, "has no lockstep tables")
		})
	}

	// On SQLite the schema itself is compared with migrate up's.
	schema := func(url string) []string {
		drv, err := dsn.Open(context.Background(), url)
		require.NoError(t, err)
		defer func() { _ = drv.Close() }()
		rows, err := drv.DB().Query("SELECT type || ' ' || name || ' ' || COALESCE(sql, '') FROM sqlite_master WHERE name NOT LIKE 'sqlite_%' ORDER BY type, name")
		require.NoError(t, err)
		defer rows.Close()
		var out []string
		for rows.Next() {
			var s string
			require.NoError(t, rows.Scan(&s))
			out = append(out, s)
		}
		require.NoError(t, rows.Err())
		return out
	}
	byHand := "sqlite:" + filepath.Join(t.TempDir(), "hand.db")
	_, script, _ := runCLI(t, "migrate", "print", "--dialect", "sqlite")
	drv, err := dsn.Open(context.Background(), byHand)
	require.NoError(t, err)
	for _, stmt := range migrate.Split(script) {
		_, err := drv.DB().Exec(stmt)
		require.NoError(t, err, stmt)
	}
	require.NoError(t, drv.Close())
	byUp := "sqlite:" + filepath.Join(t.TempDir(), "up.db")
	code, _, errOut := runCLI(t, "--dsn", byUp, "migrate", "up")
	require.Equal(t, 0, code, errOut)
	require.Equal(t, schema(byUp), schema(byHand))
}
