package cli

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"

	"github.com/spf13/cobra"

	"github.com/lockstep-queue/lockstep/internal/cli/clienv"
)

// The binary's version, from what the Go toolchain recorded in it: the
// module's version (a tag, a pseudo-version, or "(devel)"), the Go
// version, and the commit it was built from when it was built in a
// checkout. Nothing is stamped by hand, so it cannot go stale.

const modulePath = "github.com/lockstep-queue/lockstep"

// moduleVersion is the lockstep module's version in this binary: the main
// module's when lockstep itself was built, the dependency's when it was
// built into another module's binary.
func moduleVersion() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "(unknown)"
	}
	if bi.Main.Path == modulePath && bi.Main.Version != "" {
		return bi.Main.Version
	}
	for _, dep := range bi.Deps {
		if dep.Path == modulePath {
			return dep.Version
		}
	}
	return "(devel)"
}

// versionText is what `lockstep version` and `lockstep --version` print.
func versionText() string {
	var b strings.Builder
	fmt.Fprintf(&b, "lockstep %s\n", moduleVersion())
	fmt.Fprintf(&b, "module    %s\n", modulePath)
	fmt.Fprintf(&b, "go        %s %s/%s\n", runtime.Version(), runtime.GOOS, runtime.GOARCH)
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return b.String()
	}
	vcs := map[string]string{}
	for _, s := range bi.Settings {
		vcs[s.Key] = s.Value
	}
	if rev := vcs["vcs.revision"]; rev != "" {
		if vcs["vcs.modified"] == "true" {
			rev += " (with uncommitted changes)"
		}
		fmt.Fprintf(&b, "commit    %s\n", rev)
		if at := vcs["vcs.time"]; at != "" {
			fmt.Fprintf(&b, "committed %s\n", at)
		}
	}
	return b.String()
}

func newVersionCmd(c *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print lockstep's version, the Go version and the commit it was built from",
		Args:  cobra.NoArgs,
		RunE: func(_ *cobra.Command, _ []string) error {
			_, err := fmt.Fprint(c.Stdout, versionText())
			return err
		},
	}
	// It opens no database.
	clienv.SetDatabaseUse(cmd, clienv.DatabaseAny)
	return cmd
}
