package labcli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestRoundProgressOffTerminal: where stderr is not a terminal (a log
// file; clienv's TestIsTerminal covers /dev/null) lab race draws no bar, whose redrawn frames are a line
// of carriage returns per round in a log, but writes a plain line at each
// tenth of the rounds.
func TestRoundProgressOffTerminal(t *testing.T) {
	log, err := os.Create(filepath.Join(t.TempDir(), "race.log"))
	require.NoError(t, err)
	progress, finish := roundProgress(log, 1000, "range-status     × claim default")
	for round := 1; round <= 1000; round++ {
		progress(round)
	}
	finish()
	require.NoError(t, log.Close())
	b, err := os.ReadFile(log.Name())
	require.NoError(t, err)
	out := string(b)
	require.NotContains(t, out, "\r")
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	require.Len(t, lines, 10, out)
	require.Equal(t, "range-status     × claim default: 100 of 1000 rounds", lines[0])
	require.Equal(t, "range-status     × claim default: 1000 of 1000 rounds", lines[9])

}
