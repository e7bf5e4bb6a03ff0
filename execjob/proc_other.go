//go:build !unix

package execjob

import (
	"os/exec"
	"time"
)

// processGroup: without Unix process groups only the command itself is
// killed (os/exec's default) when the job's context ends.
type processGroup struct{ cmd *exec.Cmd }

func newProcessGroup(cmd *exec.Cmd, _ time.Duration) *processGroup {
	return &processGroup{cmd: cmd}
}

// wait waits for the started command.
func (g *processGroup) wait() error { return g.cmd.Wait() }

func signalOf(*exec.ExitError) string { return "" }
