package mysql_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	gomysql "github.com/go-sql-driver/mysql"
	"github.com/stretchr/testify/require"

	"github.com/lockstep-queue/lockstep/driver/mysql"
	"github.com/lockstep-queue/lockstep/internal/dsnparse"
	"github.com/lockstep-queue/lockstep/internal/testdb"
)

// TestOpenDSNForms: Open takes a mysql:// or mariadb:// URL as well as
// go-sql-driver's DSN (which every other test uses), and sets its own
// session settings either way.
func TestOpenDSNForms(t *testing.T) {
	ctx := context.Background()
	native := testdb.MySQL(t)
	cfg, err := gomysql.ParseDSN(native)
	require.NoError(t, err)
	for _, dsn := range []string{
		fmt.Sprintf("mysql://%s@%s/%s", cfg.User, cfg.Addr, cfg.DBName),
		fmt.Sprintf("mariadb://%s:@%s/%s?timeout=10s&interpolateParams=false", cfg.User, cfg.Addr, cfg.DBName),
	} {
		d, err := mysql.Open(ctx, dsn)
		require.NoError(t, err, dsn)
		var db, isolation string
		require.NoError(t, d.DB().QueryRowContext(ctx, "SELECT DATABASE(), @@SESSION."+mysql.IsolationVariable(mustVersion(t, d))).Scan(&db, &isolation))
		require.Equal(t, cfg.DBName, db)
		require.Equal(t, "READ-COMMITTED", isolation)
		require.NoError(t, d.Close())
	}
}

func mustVersion(t *testing.T, d *mysql.Driver) string {
	t.Helper()
	v, err := d.Version(context.Background())
	require.NoError(t, err)
	return v
}

func TestOpenRefusesBadDSNs(t *testing.T) {
	ctx := context.Background()
	for dsn, got := range map[string]dsnparse.Form{
		"postgres://app:secret@db/q":                dsnparse.PostgresURL,
		"host=db user=app password=secret dbname=q": dsnparse.PostgresKeywords,
		"sqlite:q.db": dsnparse.SQLiteScheme,
		"./q.db":      dsnparse.SQLitePath,
	} {
		_, err := mysql.Open(ctx, dsn)
		var wd *dsnparse.WrongDialectError
		require.True(t, errors.As(err, &wd), "%s: %v", dsn, err)
		require.Equal(t, got, wd.Got)
		require.EqualError(t, err, "mysql: mysql DSN expected, got "+got.String()+"; accepted forms: "+dsnparse.MySQLForms)
	}
	_, err := mysql.Open(ctx, "app:secret@tcp(h:3306)/q?strict=true")
	require.EqualError(t, err, "mysql: mysql DSN app:xxxxx@tcp(h:3306)/q?strict=true: the strict parameter was removed from go-sql-driver (its strict mode is gone); leave it out")
}
