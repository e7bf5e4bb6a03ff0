//go:build unix && !linux

package execjob

// waitExited would wait for pid to exit without reaping it; without waitid
// it reports false at once, and the group is killed after the command is
// reaped (see processGroup.wait).
func waitExited(int) bool { return false }
