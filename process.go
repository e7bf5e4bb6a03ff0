package lockstep

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"runtime/debug"
	"slices"
	"strings"
	"time"

	"github.com/lockstep-queue/lockstep/rowtype"
)

// DefaultProcessRetention is how long the row of a process that stopped
// without a clean Stop (killed, or its machine lost) is kept and shown as
// DEAD before retention deletes it: a day.
const DefaultProcessRetention = 24 * time.Hour

// ProcessRow is a registered process as it registered itself.
type ProcessRow = rowtype.ProcessRow

// ProcessState is LIVE or DEAD (see rowtype.ProcessState).
type ProcessState = rowtype.ProcessState

// The process states.
const (
	ProcessLive = rowtype.ProcessLive
	ProcessDead = rowtype.ProcessDead
)

// processJobsMax bounds the RUNNING jobs read per process: a process runs
// at most its workers' worth.
const processJobsMax = 1000

// deregisterTimeout bounds the delete of the process's row at Stop.
const deregisterTimeout = 5 * time.Second

// processPruneBatch and maxProcessPruneBatches bound one retention pass
// over dead processes' rows.
const (
	processPruneBatch      = 100
	maxProcessPruneBatches = 10
)

// Process is a registered process as the processes page and `lockstep
// processes` show it.
type Process struct {
	*ProcessRow
	// State is DEAD when the heartbeat is older than the reap limit
	// (Config.ReapAfter of the client that read it).
	State ProcessState
	// HeartbeatAge is how old the heartbeat was by the database's clock.
	HeartbeatAge time.Duration
	// Running are the RUNNING jobs whose current attempt it claimed
	// (oldest heartbeat first, at most 1000): a DEAD process's are the
	// jobs the reaper is about to return.
	Running []*JobRow
}

// ProcessID is the id this client registered at Start (host-pid-random),
// written to the jobs it claims; empty before Start.
func (c *Client) ProcessID() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.processID
}

// Processes lists the registered processes, ordered by id, each with its
// state by this client's ReapAfter, its heartbeat's age and its RUNNING
// jobs, and the database's clock when they were read.
func (c *Client) Processes(ctx context.Context) ([]Process, time.Time, error) {
	var list *rowtype.ProcessList
	err := c.retryDBIdempotent(ctx, "list processes", func(ctx context.Context) error {
		var err error
		list, err = c.exec.ProcessList(ctx)
		return err
	})
	if err != nil {
		return nil, time.Time{}, fmt.Errorf("lockstep: %w", err)
	}
	out := make([]Process, 0, len(list.Processes))
	for _, p := range list.Processes {
		pr := Process{ProcessRow: p, State: rowtype.ProcessStateOf(p, list.Now, c.cfg.ReapAfter), HeartbeatAge: p.HeartbeatAge(list.Now)}
		err := c.retryDBIdempotent(ctx, "running jobs of a process", func(ctx context.Context) error {
			var err error
			pr.Running, err = c.exec.JobRunningByProcess(ctx, p.ID, processJobsMax)
			return err
		})
		if err != nil {
			return nil, time.Time{}, fmt.Errorf("lockstep: %w", err)
		}
		out = append(out, pr)
	}
	return out, list.Now, nil
}

// ReapAfter is the client's reap limit (Config.ReapAfter): a process whose
// heartbeat is older is DEAD.
func (c *Client) ReapAfter() time.Duration { return c.cfg.ReapAfter }

// newProcess is this client's row: a fresh id per Start.
func (c *Client) newProcess() *rowtype.ProcessRow {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "unknown"
	}
	var b [4]byte
	_, _ = rand.Read(b[:])
	pid := os.Getpid()
	names := make([]string, 0, len(c.cfg.Queues))
	workers := 0
	for name, q := range c.cfg.Queues {
		names = append(names, fmt.Sprintf("%s=%d", name, q.MaxWorkers))
		workers += q.MaxWorkers
	}
	slices.Sort(names)
	return &rowtype.ProcessRow{
		ID:   fmt.Sprintf("%s-%d-%s", host, pid, hex.EncodeToString(b[:])),
		Host: host, PID: pid, Version: moduleVersion(),
		Queues: strings.Join(names, ","), Workers: workers,
	}
}

// register inserts the process's row. A failure is logged, not returned:
// the process heartbeat inserts the row when it finds none.
func (c *Client) register(ctx context.Context, p *rowtype.ProcessRow) {
	if err := c.exec.ProcessInsert(ctx, p); err != nil && ctx.Err() == nil {
		c.logger.Error("lockstep: registering the process failed; the heartbeat will retry", "process", p.ID, "err", err)
	}
}

// processLoop refreshes the process's heartbeat on the job heartbeat's
// cadence: its own row by primary key, in a statement of its own, never
// inside a job's transaction. A row gone (pruned while the process could
// not reach the database) is inserted again.
func (c *Client) processLoop(ctx context.Context, p *rowtype.ProcessRow) {
	every(ctx, c.cfg.HeartbeatInterval, func(ctx context.Context) {
		c.processHeartbeat(ctx, p)
	})
}

func (c *Client) processHeartbeat(ctx context.Context, p *rowtype.ProcessRow) {
	defer c.writes.start()()
	var found bool
	err := c.retryDBIdempotent(ctx, "process heartbeat", func(ctx context.Context) error {
		var err error
		found, err = c.exec.ProcessHeartbeat(ctx, p.ID)
		return err
	})
	switch {
	case err != nil:
		if ctx.Err() == nil {
			c.logger.Error("lockstep: process heartbeat failed", "process", p.ID, "err", err)
		}
	case !found:
		c.register(ctx, p)
	}
}

// deregister deletes the process's row at a clean stop.
func (c *Client) deregister(p *rowtype.ProcessRow) {
	// Bounded: a database that is away must not hold Stop up for long; the
	// row then shows DEAD until retention deletes it.
	ctx, cancel := context.WithTimeout(context.Background(), min(c.cfg.FinishTimeout, deregisterTimeout))
	defer cancel()
	err := c.retryDBIdempotent(ctx, "deregister process", func(ctx context.Context) error {
		_, err := c.exec.ProcessDelete(ctx, p.ID)
		return err
	})
	if err != nil {
		c.logger.Error("lockstep: deregistering the process failed; its row shows it DEAD until retention deletes it", "process", p.ID, "err", err)
	}
}

// PruneProcesses deletes the rows of processes whose heartbeat is older
// than Config.ProcessRetention, in bounded batches, each row by primary key
// in a statement of its own; retention runs it. It returns how many it
// deleted.
func (c *Client) PruneProcesses(ctx context.Context) (int, error) {
	total := 0
	for range maxProcessPruneBatches {
		var ids []string
		err := c.retryDBIdempotent(ctx, "prune processes", func(ctx context.Context) error {
			var err error
			ids, err = c.exec.ProcessPrune(ctx, c.cfg.ProcessRetention, processPruneBatch)
			return err
		})
		total += len(ids)
		if err != nil {
			return total, fmt.Errorf("retention: %w", err)
		}
		if len(ids) < processPruneBatch {
			break
		}
	}
	if total > 0 {
		c.logger.Info("lockstep: retention deleted the rows of long-dead processes", "processes", total)
	}
	return total, nil
}

// modulePath is the lockstep module's import path.
const modulePath = "github.com/lockstep-queue/lockstep"

// moduleVersion is the lockstep module's version in this binary, as the Go
// toolchain recorded it (the same rule as `lockstep version`): the main
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
