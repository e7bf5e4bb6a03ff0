//go:build !unix

package execjob

import (
	"os/exec"
	"time"
)

// processGroup: without Unix process groups only the command itself is
// killed (os/exec's default) when the job's context ends.
type processGroup struct{}

func newProcessGroup(*exec.Cmd, time.Duration) *processGroup { return &processGroup{} }

func (*processGroup) done() {}

func signalOf(*exec.ExitError) string { return "" }
