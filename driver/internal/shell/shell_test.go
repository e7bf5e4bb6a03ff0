package shell

import (
	"context"
	"database/sql"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
	_ "modernc.org/sqlite"

	"github.com/lockstep-queue/lockstep/driver/internal/sqlexec"
)

func open(t *testing.T) *sql.DB {
	db, err := sql.Open("sqlite", "file:"+t.TempDir()+"/shell.db")
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() })
	return db
}

// A driver closes only the pool it owns, and a driver derived from it —
// with its own executor settings, which the original keeps — closes
// nothing.
func TestOwnDeriveClose(t *testing.T) {
	db := open(t)
	s := New(Config{Dialect: "test", DB: db, Exec: &sqlexec.Dialect{ChunkSize: 500}})
	require.NoError(t, s.Close(), "a pool the caller passed in stays open")
	require.NoError(t, db.Ping())

	also := 0
	Own(&s, db, func() { also++ })
	d := Derive(s, func(c *Config) { c.Exec.ChunkSize = 1 })
	require.Equal(t, 500, s.cfg.Exec.ChunkSize, "deriving leaves the original's executor alone")
	require.Equal(t, 1, d.cfg.Exec.ChunkSize)
	require.NoError(t, d.Close())
	require.NoError(t, db.Ping(), "a derived driver leaves the pool to the original")
	require.Zero(t, also)

	require.NoError(t, s.Close())
	require.Error(t, db.Ping(), "the owner closes the pool")
	require.Equal(t, 1, also, "and what was opened with it")
}

// Begin's error names the dialect and keeps the hook's error.
func TestBeginSQLError(t *testing.T) {
	stop := errors.New("no transaction today")
	s := New(Config{Dialect: "test", DB: open(t), Exec: &sqlexec.Dialect{},
		BeginSQL: func(context.Context, *sql.DB) (*sql.Tx, error) { return nil, stop }})
	_, err := s.Begin(context.Background())
	require.ErrorIs(t, err, stop)
	require.EqualError(t, err, "test: begin: no transaction today")
}
