package main

import (
	"os"
	"testing"

	"github.com/lockstep-queue/lockstep/internal/testdb"
)

// TestMain starts throwaway database servers lazily, for the commands
// that need MariaDB or PostgreSQL.
func TestMain(m *testing.M) { os.Exit(testdb.Main(m)) }
