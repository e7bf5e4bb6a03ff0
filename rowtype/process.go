package rowtype

import "time"

// ProcessState is whether a registered process is alive, for people: the
// word the CLI and the dashboard show. It is read from the row's heartbeat
// and the reap limit (ProcessStateOf), never stored.
type ProcessState string

// The process states.
const (
	// ProcessLive: the process refreshed its heartbeat within the reap
	// limit.
	ProcessLive ProcessState = "LIVE"
	// ProcessDead: its heartbeat is older than the reap limit — the
	// process was killed or lost the database — so the reaper returns the
	// RUNNING jobs it claimed, as it does any job with a heartbeat that
	// old.
	ProcessDead ProcessState = "DEAD"
)

// ProcessRow is one process that runs workers, as it registered itself at
// start (lockstep_processes).
type ProcessRow struct {
	// ID is made by the client: host-pid-random.
	ID      string
	Host    string
	PID     int
	Version string
	// Queues are the queues the process serves, comma-separated, each as
	// NAME=MAX_WORKERS.
	Queues string
	// Workers is the sum of the queues' worker counts.
	Workers     int
	StartedAt   time.Time
	HeartbeatAt time.Time
}

// HeartbeatAge is how old the process's heartbeat was at now (the
// database's clock).
func (p *ProcessRow) HeartbeatAge(now time.Time) time.Duration {
	return now.Sub(p.HeartbeatAt)
}

// ProcessStateOf is DEAD when the heartbeat is older than reapAfter at now
// (the database's clock), LIVE otherwise.
func ProcessStateOf(p *ProcessRow, now time.Time, reapAfter time.Duration) ProcessState {
	if p.HeartbeatAge(now) > reapAfter {
		return ProcessDead
	}
	return ProcessLive
}

// ProcessList is every registered process, ordered by id, and the
// database's clock when they were read.
type ProcessList struct {
	Processes []*ProcessRow
	Now       time.Time
}
