package labcli

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestWithPoolMaxConns: the soak sizes the pgx pool in either PostgreSQL
// form, unless the DSN already does.
func TestWithPoolMaxConns(t *testing.T) {
	for in, want := range map[string]string{
		"postgres://u@h/db?sslmode=disable":                  "postgres://u@h/db?pool_max_conns=20&sslmode=disable",
		"postgres://u@h/db?pool_max_conns=3":                 "postgres://u@h/db?pool_max_conns=3",
		"host=h user=u dbname=db sslmode=disable":            "host=h user=u dbname=db sslmode=disable pool_max_conns=20",
		"host=h user=u dbname=db pool_max_conns=3 port=5432": "host=h user=u dbname=db pool_max_conns=3 port=5432",
	} {
		got, err := withPoolMaxConns(in, 20)
		require.NoError(t, err)
		require.Equal(t, want, got, in)
	}
}
