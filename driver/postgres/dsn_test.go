package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lockstep-queue/lockstep/driver/postgres"
	"github.com/lockstep-queue/lockstep/internal/dsnparse"
	"github.com/lockstep-queue/lockstep/internal/testdb"
)

// TestOpenDSNForms: Open takes libpq's key=value form as well as the URL
// (which every other test uses), and several hosts, which pgx tries in
// order.
func TestOpenDSNForms(t *testing.T) {
	ctx := context.Background()
	pgURL := testdb.Postgres(t)
	u, err := url.Parse(pgURL)
	require.NoError(t, err)
	db := u.Path[1:]
	for _, dsn := range []string{
		fmt.Sprintf("host=%s port=%s user=%s dbname='%s' sslmode=disable", u.Hostname(), u.Port(), u.User.Username(), db),
		// The first host is down.
		fmt.Sprintf("postgresql://%s@%s,%s/%s?sslmode=disable&connect_timeout=5", u.User.Username(), testdb.ClosedAddr(t), u.Host, db),
	} {
		d, err := postgres.Open(ctx, dsn)
		require.NoError(t, err, dsn)
		var got, seqscan string
		require.NoError(t, d.DB().QueryRowContext(ctx, "SELECT current_database(), current_setting('enable_seqscan')").Scan(&got, &seqscan))
		require.Equal(t, db, got)
		require.Equal(t, "off", seqscan, "Open's planner settings apply whatever the form")
		require.NoError(t, d.Close())
	}
}

func TestOpenRefusesBadDSNs(t *testing.T) {
	ctx := context.Background()
	for dsn, got := range map[string]dsnparse.Form{
		"mysql://app:secret@db:3306/q": dsnparse.MySQLURL,
		"app:secret@tcp(db:3306)/q":    dsnparse.MySQLNative,
		"sqlite:q.db":                  dsnparse.SQLiteScheme,
		"lockstep.db":                  dsnparse.SQLitePath,
	} {
		_, err := postgres.Open(ctx, dsn)
		var wd *dsnparse.WrongDialectError
		require.True(t, errors.As(err, &wd), "%s: %v", dsn, err)
		require.Equal(t, got, wd.Got)
		require.EqualError(t, err, "postgres: postgres DSN expected, got "+got.String()+"; accepted forms: "+dsnparse.PostgresForms)
	}
	_, err := postgres.Open(ctx, "postgres://app:secret@db/q?sslmode=sometimes")
	require.EqualError(t, err, "postgres: postgres DSN postgres://app:xxxxx@db/q?sslmode=sometimes: failed to configure TLS (sslmode is invalid)")
}
