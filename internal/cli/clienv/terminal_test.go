package clienv

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestIsTerminal: neither a file, a pipe, a buffer nor /dev/null is a
// terminal. /dev/null is a character device, as a terminal is: telling
// them apart by the file's mode drew progress bars into it, and into any
// other device that is not a terminal.
func TestIsTerminal(t *testing.T) {
	null, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	require.NoError(t, err)
	defer func() { _ = null.Close() }()
	fi, err := null.Stat()
	require.NoError(t, err)
	require.NotZero(t, fi.Mode()&os.ModeCharDevice, "the case a mode check gets wrong")
	require.False(t, IsTerminal(null))

	f, err := os.Create(filepath.Join(t.TempDir(), "log"))
	require.NoError(t, err)
	defer func() { _ = f.Close() }()
	require.False(t, IsTerminal(f))

	r, w, err := os.Pipe()
	require.NoError(t, err)
	defer func() { _ = r.Close(); _ = w.Close() }()
	require.False(t, IsTerminal(w))

	require.False(t, IsTerminal(&bytes.Buffer{}))
}
