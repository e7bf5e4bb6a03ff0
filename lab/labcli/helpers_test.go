package labcli

import (
	"context"
	"io"
	"os"
	"testing"

	"github.com/lockstep-queue/lockstep/internal/cli"
	"github.com/lockstep-queue/lockstep/internal/clitest"
)

// The helpers the package's test files share; the ones the queue CLI's
// tests need as well are in internal/clitest.

// TestMain starts throwaway database servers lazily, for the commands
// that need MariaDB or PostgreSQL, and removes the binary the chaos tests
// built.
func TestMain(m *testing.M) {
	os.Exit(clitest.Main(m))
}

// runCLI runs the command line in-process, with the lab mounted as
// cmd/lockstep mounts it (the lab's tests run migrate and deadlock decode
// too), and returns its exit code and output.
func runCLI(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	return clitest.InProcess(t, func(ctx context.Context, args []string, stdout, stderr io.Writer) int {
		return cli.Run(ctx, args, stdout, stderr, Extension())
	}, args...)
}
