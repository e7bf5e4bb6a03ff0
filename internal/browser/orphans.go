package browser

import (
	"bytes"
	"strings"

	"github.com/lockstep-queue/lockstep/internal/proc"
)

// reapOrphans kills the Chromiums of test binaries that died without calling
// Close (a panic, a -timeout, SIGKILL): the parent-death signal stops their
// chromedriver but not the browser it started, which would otherwise run on
// forever. Such a browser is recognised by a profile in a directory named
// after a pid that no longer exists; its process group is that of the dead
// chromedriver, which held only the browser and its helpers.
func reapOrphans() { proc.KillOrphanGroups(profileOwner) }

// profileOwner returns the pid in the dirPrefix directory named by a
// --user-data-dir flag in a NUL-separated command line, or 0.
func profileOwner(cmdline []byte) int {
	for arg := range bytes.SplitSeq(cmdline, []byte{0}) {
		dir, ok := bytes.CutPrefix(arg, []byte("--user-data-dir="))
		if !ok {
			continue
		}
		for elem := range strings.SplitSeq(string(dir), "/") {
			if strings.HasPrefix(elem, dirPrefix) {
				return proc.OwnerPID(elem, dirPrefix)
			}
		}
	}
	return 0
}
