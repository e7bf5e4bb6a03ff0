package servers_test

import (
	"context"
	"database/sql"
	"os"
	"strings"
	"testing"
	"time"

	_ "github.com/go-sql-driver/mysql"
	_ "github.com/jackc/pgx/v5/stdlib"

	"github.com/lockstep-queue/lockstep/bench/internal/servers"
)

// TestDurable checks that the servers we start really flush every commit,
// which is what the benchmarks claim.
func TestDurable(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	set, err := servers.Start(ctx, t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := set.Close(); err != nil {
			t.Error(err)
		}
	}()
	for _, c := range []struct {
		name, driver string
		fresh        func(context.Context) (string, error)
		env          string
		want         map[string]string
		show         string
	}{
		{"mysql", "mysql", set.MySQL, servers.EnvMySQLDSN, map[string]string{
			"innodb_flush_log_at_trx_commit": "1", "innodb_doublewrite": "1",
		}, "SELECT @@GLOBAL.%s"},
		// innodb_doublewrite is an enum on Oracle MySQL since 8.0.30.
		{"oraclemysql", "mysql", set.OracleMySQL, servers.EnvOracleMySQLDSN, map[string]string{
			"innodb_flush_log_at_trx_commit": "1", "innodb_doublewrite": "ON",
		}, "SELECT @@GLOBAL.%s"},
		{"postgres", "pgx", set.Postgres, servers.EnvPostgresDSN, map[string]string{
			"fsync": "on", "synchronous_commit": "on", "full_page_writes": "on",
		}, "SELECT current_setting('%s')"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dsn, err := c.fresh(ctx)
			if err != nil {
				t.Fatal(err)
			}
			db, err := sql.Open(c.driver, dsn)
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			if _, err := db.ExecContext(ctx, "CREATE TABLE t (id INT PRIMARY KEY)"); err != nil {
				t.Fatal(err)
			}
			if os.Getenv(c.env) != "" {
				return // an external server's settings are its owner's
			}
			for name, want := range c.want {
				var got string
				if err := db.QueryRowContext(ctx, strings.Replace(c.show, "%s", name, 1)).Scan(&got); err != nil {
					t.Fatal(err)
				}
				if got != want {
					t.Errorf("%s = %q, want %q", name, got, want)
				}
			}
			if err := set.Drop(ctx, dsn); err != nil {
				t.Fatal(err)
			}
		})
	}
	my, pg := set.Versions(ctx)
	oracle := set.OracleMySQLVersion(ctx)
	t.Logf("versions: %s / %s / %s", my, oracle, pg)
	if my == "unavailable" || pg == "unavailable" || oracle == "unavailable" {
		t.Fatalf("versions: %q %q %q", my, oracle, pg)
	}
}
