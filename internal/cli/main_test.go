package cli

import (
	"os"
	"testing"

	"github.com/lockstep-queue/lockstep/internal/testdb"
)

// TestMain starts throwaway database servers lazily, for the commands
// that need MariaDB or PostgreSQL, and removes the binary the CLI tests
// built.
func TestMain(m *testing.M) {
	code := testdb.Main(m)
	removeLockstepBinary()
	os.Exit(code)
}
