package lockstep_test

import (
	"os"
	"testing"

	"github.com/lockstep-queue/lockstep/internal/testdb"
)

// TestMain starts the throwaway MariaDB and PostgreSQL servers the
// package's tests ask for (on first use) and removes them afterwards.
func TestMain(m *testing.M) { os.Exit(testdb.Main(m)) }
