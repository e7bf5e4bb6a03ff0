package sqlexec

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/lockstep-queue/lockstep/driver/catalog"
	"github.com/lockstep-queue/lockstep/rowtype"
)

// processListMax bounds the processes one read lists: the table holds a
// row per running process (and the dead ones until they are pruned).
const processListMax = 1000

// ProcessInsert implements driver.Executor: one new row, in a statement
// of its own.
func (e *Executor) ProcessInsert(ctx context.Context, p *rowtype.ProcessRow) error {
	_, err := e.exec(ctx, e.q, catalog.ProcessInsert, e.cat().Get(catalog.ProcessInsert).SQL,
		p.ID, p.Host, p.PID, p.Version, p.Queues, p.Workers)
	return e.wrap(fmt.Sprintf("register process %q", p.ID), err)
}

// ProcessHeartbeat implements driver.Executor: the process's row by
// primary key, in a statement of its own.
func (e *Executor) ProcessHeartbeat(ctx context.Context, id string) (bool, error) {
	res, err := e.exec(ctx, e.q, catalog.ProcessHeartbeat, e.cat().Get(catalog.ProcessHeartbeat).SQL, id)
	if err != nil {
		return false, e.wrap(fmt.Sprintf("heartbeat of process %q", id), err)
	}
	return res.RowsAffected > 0, nil
}

// ProcessDelete implements driver.Executor.
func (e *Executor) ProcessDelete(ctx context.Context, id string) (bool, error) {
	res, err := e.exec(ctx, e.q, catalog.ProcessDelete, e.cat().Get(catalog.ProcessDelete).SQL, id)
	if err != nil {
		return false, e.wrap(fmt.Sprintf("deregister process %q", id), err)
	}
	return res.RowsAffected > 0, nil
}

// ProcessPrune implements driver.Executor: a bounded read of the stale
// ids, then each row deleted by primary key in a statement of its own,
// if its heartbeat is still that old (a process that came back keeps it).
func (e *Executor) ProcessPrune(ctx context.Context, olderThan time.Duration, max int) ([]string, error) {
	if max <= 0 {
		return nil, nil
	}
	rows, err := e.query(ctx, e.q, catalog.ProcessStale, e.cat().Get(catalog.ProcessStale).SQL, micros(olderThan), max)
	if err != nil {
		return nil, e.wrap("prune processes", err)
	}
	var ids []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			rows.Close()
			return nil, e.wrap("prune processes", err)
		}
		ids = append(ids, id)
	}
	if err := errors.Join(rows.Err(), rows.Close()); err != nil {
		return nil, e.wrap("prune processes", err)
	}
	var out []string
	for _, id := range ids {
		res, err := e.exec(ctx, e.q, catalog.ProcessPrune, e.cat().Get(catalog.ProcessPrune).SQL, id, micros(olderThan))
		if err != nil {
			return out, e.wrap(fmt.Sprintf("prune process %q", id), err)
		}
		if res.RowsAffected > 0 {
			out = append(out, id)
		}
	}
	return out, nil
}

// ProcessList implements driver.Executor.
func (e *Executor) ProcessList(ctx context.Context) (*rowtype.ProcessList, error) {
	rows, err := e.query(ctx, e.q, catalog.ProcessList, e.cat().Get(catalog.ProcessList).SQL, processListMax)
	if err != nil {
		return nil, e.wrap("list processes", err)
	}
	out := &rowtype.ProcessList{}
	for rows.Next() {
		p := &rowtype.ProcessRow{}
		var pid, workers int64
		if err := rows.Scan(&p.ID, &p.Host, nullInt64{&pid}, &p.Version, &p.Queues, nullInt64{&workers},
			nullTime{&p.StartedAt}, nullTime{&p.HeartbeatAt}, nullTime{&out.Now}); err != nil {
			rows.Close()
			return nil, e.wrap("list processes", err)
		}
		p.PID, p.Workers = int(pid), int(workers)
		out.Processes = append(out.Processes, p)
	}
	if err := errors.Join(rows.Err(), rows.Close()); err != nil {
		return nil, e.wrap("list processes", err)
	}
	return out, nil
}

// JobRunningByProcess implements driver.Executor.
func (e *Executor) JobRunningByProcess(ctx context.Context, id string, max int) ([]*rowtype.JobRow, error) {
	if max <= 0 {
		return nil, nil
	}
	rows, err := e.query(ctx, e.q, catalog.JobRunningByProcess, e.cat().Get(catalog.JobRunningByProcess).SQL, id, max)
	if err != nil {
		return nil, e.wrap(fmt.Sprintf("running jobs of process %q", id), err)
	}
	jobs, err := scanJobs(rows)
	if err != nil {
		return nil, e.wrap(fmt.Sprintf("running jobs of process %q", id), err)
	}
	return jobs, nil
}
