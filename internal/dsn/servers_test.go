package dsn

import (
	"context"
	"fmt"
	"net/url"
	"testing"

	gomysql "github.com/go-sql-driver/mysql"
	"github.com/stretchr/testify/require"

	"github.com/lockstep-queue/lockstep/internal/testdb"
	"github.com/lockstep-queue/lockstep/migrate"
)

// Each server is opened through each of its dialect's forms, as the CLI
// would be given them, and the queue's schema is migrated there.
func TestOpenServers(t *testing.T) {
	t.Run("MariaDB", func(t *testing.T) {
		t.Parallel()
		native := testdb.MySQL(t) // root@tcp(127.0.0.1:PORT)/db?params
		cfg, err := gomysql.ParseDSN(native)
		require.NoError(t, err)
		openEach(t, "mysql",
			native,
			fmt.Sprintf("mysql://%s@%s/%s", cfg.User, cfg.Addr, cfg.DBName),
			fmt.Sprintf("mariadb://%s:@%s/%s?timeout=10s", cfg.User, cfg.Addr, cfg.DBName),
		)
	})
	t.Run("PostgreSQL", func(t *testing.T) {
		t.Parallel()
		pgURL := testdb.Postgres(t) // postgres://postgres@127.0.0.1:PORT/db?sslmode=disable
		u, err := url.Parse(pgURL)
		require.NoError(t, err)
		openEach(t, "postgres",
			pgURL,
			fmt.Sprintf("host=%s port=%s user=%s dbname=%s sslmode=disable", u.Hostname(), u.Port(), u.User.Username(), u.Path[1:]),
			// Several hosts, as pgx takes them: the first is down, so
			// pgx goes on to the second.
			fmt.Sprintf("postgresql://%s@%s,%s/%s?sslmode=disable&connect_timeout=5", u.User.Username(), testdb.ClosedAddr(t), u.Host, u.Path[1:]),
		)
	})
}

func openEach(t *testing.T, dialect string, dsns ...string) {
	t.Helper()
	ctx := context.Background()
	for _, dsn := range dsns {
		d, err := Open(ctx, dsn)
		require.NoError(t, err, dsn)
		require.Equal(t, dialect, d.Dialect())
		m, err := migrate.New(d)
		require.NoError(t, err)
		_, err = m.Up(ctx)
		require.NoError(t, err, dsn)
		require.NoError(t, d.Close())
	}
}
