package metrics_test

import (
	"os"
	"testing"

	"github.com/lockstep-queue/lockstep/internal/testdb"
)

// TestMain stops the database servers the tests on MariaDB and PostgreSQL
// start lazily.
func TestMain(m *testing.M) { os.Exit(testdb.Main(m)) }
