package lockstep

import (
	"context"
	"fmt"

	"github.com/lockstep-queue/lockstep/rowtype"
)

// The graph of a workflow, for the CLI and the dashboard: a run's jobs and
// the edges among them, read in two bounded, non-locking reads.

// DefaultRunGraphLimit is the number of jobs RunGraph reads when its limit
// is 0, and MaxRunGraphLimit the most it reads: a graph is read to be
// shown, and a run wider than a screen is better listed than drawn.
const (
	DefaultRunGraphLimit = 500
	MaxRunGraphLimit     = 10_000
)

// RunGraph is a run's workflow: its jobs, callbacks included, lowest id
// first, and the jobs each depends on.
type RunGraph struct {
	Run *Run
	// Jobs are the run's first jobs by id (a job's dependencies always
	// have lower ids, so these are closed under dependency). A callback
	// has Callback set.
	Jobs []*JobRow
	// DependsOn maps a job's id to the ids of the jobs it depends on,
	// ascending; jobs without dependencies are absent. A callback depends
	// on every other job of its run.
	DependsOn map[int64][]int64
	// Truncated: the run has more jobs than the limit; Jobs and DependsOn
	// cover the first limit of them only.
	Truncated bool
}

// IsWorkflow reports whether the graph has a dependency or a callback:
// a run of independent jobs has nothing to draw.
func (g *RunGraph) IsWorkflow() bool {
	if len(g.DependsOn) > 0 {
		return true
	}
	for _, j := range g.Jobs {
		if j.Callback != "" {
			return true
		}
	}
	return false
}

// RunGraph reads a run and the graph of its first limit jobs (0:
// DefaultRunGraphLimit; at most MaxRunGraphLimit): the jobs through the
// run's index, then their dependencies through the edges' primary key,
// neither read locking anything. A run that does not exist is ErrNotFound.
func (c *Client) RunGraph(ctx context.Context, runID int64, limit int) (*RunGraph, error) {
	switch {
	case limit == 0:
		limit = DefaultRunGraphLimit
	case limit < 0 || limit > MaxRunGraphLimit:
		return nil, fmt.Errorf("run graph: limit must be 1 to %d, got %d", MaxRunGraphLimit, limit)
	}
	run, err := c.exec.RunGet(ctx, runID)
	if err != nil {
		return nil, fmt.Errorf("run graph: %w", err)
	}
	// One job more than the limit tells whether the run has more.
	jobs, err := c.exec.JobList(ctx, &rowtype.JobListParams{RunID: runID, Limit: limit + 1})
	if err != nil {
		return nil, fmt.Errorf("run graph: %w", err)
	}
	g := &RunGraph{Run: run}
	if len(jobs) > limit {
		jobs, g.Truncated = jobs[:limit], true
	}
	g.Jobs = jobs
	ids := make([]int64, len(jobs))
	for i, j := range jobs {
		ids[i] = j.ID
	}
	// A job that is no longer WAITING keeps its edges, so every job's are
	// read, not only the waiting ones'.
	if g.DependsOn, err = c.exec.JobDependencies(ctx, ids); err != nil {
		return nil, fmt.Errorf("run graph: %w", err)
	}
	return g, nil
}
