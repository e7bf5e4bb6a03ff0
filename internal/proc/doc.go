// Package proc starts and stops the helper processes tests depend on
// (database servers, chromedriver and the Chromium it starts) so that none
// of them outlives the test binary that started it, whether that binary
// returns normally, panics, hits -timeout or is killed.
//
// Three mechanisms work together:
//
//   - Each child leads a process group of its own (Setpgid). Stopping the
//     group also reaches what the child started (PostgreSQL's backends,
//     Chromium's helpers), and a Ctrl-C aimed at `go test`, which the
//     terminal sends to its foreground group, does not hit the child
//     before the test binary can stop it properly.
//   - On Linux the kernel kills the child when the test binary dies
//     (Pdeathsig SIGKILL): that covers the exits on which no cleanup runs.
//     Start forks from a locked OS thread for it; see Start.
//   - What the parent-death signal cannot reach (a grandchild, a temp dir)
//     carries its owner's pid in its name (OwnedTempDir), so that a later
//     test binary can clean up after one that died (RemoveStaleDirs,
//     KillOrphanGroups).
package proc
