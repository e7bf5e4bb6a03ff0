package cli

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lockstep-queue/lockstep/internal/cli/clienv"
	"github.com/lockstep-queue/lockstep/internal/clitest"
	"github.com/lockstep-queue/lockstep/internal/testdb"
)

// secret is a password no message has any business showing.
const secret = "s3cret-LOCKSTEP-pw"

// TestSecretsStayOutOfLogs runs the commands that open the database with
// a password in the DSN — against a port nobody listens on, a server that
// refuses the password, and a server that accepts it — and requires the
// password to appear in no output, log line or error.
func TestSecretsStayOutOfLogs(t *testing.T) {
	closed := testdb.ClosedAddr(t)

	mysqlAddr, err := testdb.DSNAddr(testdb.MySQL(t))
	require.NoError(t, err)
	oracleAddr, err := testdb.DSNAddr(testdb.OracleMySQL(t))
	require.NoError(t, err)
	pg, err := url.Parse(testdb.Postgres(t))
	require.NoError(t, err)
	// The throwaway PostgreSQL trusts loopback: the password is accepted
	// (and ignored), so the commands run with it in their DSN.
	pg.User = url.UserPassword(pg.User.Username(), secret)

	unreachable := map[string]string{
		"mysql, nothing listening":     fmt.Sprintf("mysql://root:%s@%s/x", secret, closed),
		"postgres, nothing listening":  fmt.Sprintf("postgres://postgres:%s@%s/x?connect_timeout=5", secret, closed),
		"mariadb, wrong password":      fmt.Sprintf("mysql://root:%s@%s/mysql", secret, mysqlAddr),
		"oracle mysql, wrong password": fmt.Sprintf("mysql://root:%s@%s/mysql", secret, oracleAddr),
	}
	for name, dsn := range unreachable {
		t.Run(name, func(t *testing.T) {
			for _, args := range [][]string{
				{"stats"},
				{"jobs", "list"},
				{"migrate", "status"},
				// No wait for the database (it never comes): the
				// message, not the wait, is what is checked.
				{"work", "--kind", "demo", "--log-level", "debug", "--wait-for-database", "0"},
				{"serve", "--addr", "127.0.0.1:0", "--log-level", "debug", "--wait-for-database", "0"},
			} {
				code, out, errOut := runCLI(t, append([]string{"--dsn", dsn}, args...)...)
				require.NotContains(t, out+errOut, secret, "lockstep %s", strings.Join(args, " "))
				require.NotZero(t, code, "lockstep %s cannot work here: %s", strings.Join(args, " "), errOut)
			}
		})
	}

	t.Run("postgres, password accepted", func(t *testing.T) {
		cli := &lockstepCLI{&clitest.CLI{T: t, Bin: clitest.Binary(t), DSN: pg.String()}}
		var all strings.Builder
		for _, args := range [][]string{
			{"migrate", "up"},
			{"enqueue", "resize", "{}", "--log-level", "debug"},
			{"stats", "--log-level", "debug"},
			{"jobs", "list"},
			{"runs", "list"},
		} {
			r := cli.Run(args...)
			require.Zero(t, r.Code, "lockstep %s: %s", strings.Join(args, " "), r.Stderr)
			all.WriteString(r.Stdout + r.Stderr)
		}
		// A worker process and the dashboard, running, until SIGTERM.
		for _, args := range [][]string{
			{"work", "--kind", "demo", "--log-level", "debug"},
			{"serve", "--addr", "127.0.0.1:0", "--log-level", "debug"},
		} {
			cmd := cli.Command(context.Background(), args...)
			var out syncBuffer // url nil: it only collects
			cmd.Stdout, cmd.Stderr = &out, &out
			require.NoError(t, cmd.Start())
			clitest.WaitFor(t, "lockstep "+args[0]+" to be up", func() bool {
				return strings.Contains(out.String(), "working; stop with") || strings.Contains(out.String(), "listening")
			})
			require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
			require.NoError(t, cmd.Wait(), out.String())
			all.WriteString(out.String())
		}
		require.NotContains(t, all.String(), secret)
	})
}

// TestHTTPServersHaveLimits: the dashboard's and the workers' /metrics
// server time out slow clients at every stage (a connection that sends a
// header byte a minute holds nothing for long) and bound header size.
func TestHTTPServersHaveLimits(t *testing.T) {
	c := &app{Env: &clienv.Env{Logger: slog.New(slog.DiscardHandler)}}
	srv := c.newHTTPServer(http.NotFoundHandler())
	require.Positive(t, srv.ReadHeaderTimeout)
	require.LessOrEqual(t, srv.ReadHeaderTimeout, 10*time.Second)
	require.Positive(t, srv.ReadTimeout)
	require.Positive(t, srv.WriteTimeout)
	require.Positive(t, srv.IdleTimeout)
	require.Positive(t, srv.MaxHeaderBytes)
	require.LessOrEqual(t, srv.MaxHeaderBytes, 1<<20)

	// And a client that never finishes its header is cut off.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	srv.ReadHeaderTimeout = 200 * time.Millisecond
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	conn, err := net.Dial("tcp", ln.Addr().String())
	require.NoError(t, err)
	defer conn.Close()
	_, err = conn.Write([]byte("GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n"))
	require.NoError(t, err)
	require.NoError(t, conn.SetReadDeadline(time.Now().Add(10*time.Second)))
	_, err = io.ReadAll(conn)
	require.NoError(t, err, "the server closes the connection (EOF), before the client's own deadline")
}
