package sqlexec

import (
	"context"

	"github.com/lockstep-queue/lockstep/driver/catalog"
)

// JobDependencies reads, without locks, the jobs each of ids depends on:
// job id → its dependencies, ascending. It is the workflow graph's read
// (a run's page of jobs, then their edges) and goes through the statement
// promotion already uses for a job's own dependencies, dep.dependencies:
// lockstep_job_deps by its primary key's prefix, job_id IN (ids), in
// chunks. Jobs without dependencies are absent from the map.
func (e *Executor) JobDependencies(ctx context.Context, ids []int64) (map[int64][]int64, error) {
	ids = sortedUnique(ids)
	if len(ids) == 0 {
		return map[int64][]int64{}, nil
	}
	edges, err := e.queryEdges(ctx, e.q, catalog.DepDependencies, ids)
	if err != nil {
		return nil, e.wrap("dependencies of jobs", err)
	}
	out := make(map[int64][]int64)
	for _, ed := range edges {
		out[ed.job] = append(out[ed.job], ed.dependsOn)
	}
	for id, deps := range out {
		out[id] = sortedUnique(deps)
	}
	return out, nil
}
