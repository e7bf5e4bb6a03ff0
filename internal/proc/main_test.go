//go:build linux

package proc_test

import (
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"syscall"
	"testing"

	"github.com/lockstep-queue/lockstep/internal/proc"
)

// helperEnv makes the test binary act as a helper process instead of
// running tests: its value names the helper (see TestMain).
const helperEnv = "LOCKSTEP_PROC_TEST_HELPER"

func TestMain(m *testing.M) {
	switch mode := os.Getenv(helperEnv); mode {
	case "":
		os.Exit(m.Run())
	case "crashing-parent":
		os.Exit(crashingParent())
	case "exit-on-term":
		os.Exit(exitOnTerm())
	default:
		fmt.Fprintf(os.Stderr, "%s: unknown helper %q\n", helperEnv, mode)
		os.Exit(2)
	}
}

// crashingParent stands in for a test binary that starts a child and then
// dies without stopping it: it starts sleep, prints its pid and waits for
// the test to kill it.
func crashingParent() int {
	cmd := exec.Command("/bin/sleep", "1000")
	cmd.Stdout = os.Stdout
	p, err := proc.Start(cmd, nil)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Println(p.Pid())
	_ = p.Wait()
	return 0
}

// exitOnTerm stands in for a server that shuts down cleanly: once it has
// printed its pid, SIGTERM makes it exit with status 0. (A shell's trap
// cannot do this reliably: a signal that arrives while the shell is about
// to start a command waits until that command ends.)
func exitOnTerm() int {
	term := make(chan os.Signal, 1)
	signal.Notify(term, syscall.SIGTERM)
	fmt.Println(os.Getpid())
	<-term
	return 0
}
