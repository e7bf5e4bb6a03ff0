package sqlexec

import (
	"context"
	"fmt"

	"github.com/lockstep-queue/lockstep/driver"
	"github.com/lockstep-queue/lockstep/driver/catalog"
	"github.com/lockstep-queue/lockstep/rowtype"
)

// RunInsert creates a run.
func (e *Executor) RunInsert(ctx context.Context, p *driver.RunInsertParams) (*rowtype.RunRow, error) {
	var meta any
	if len(p.Metadata) > 0 {
		meta = string(p.Metadata)
	}
	st := e.cat().Get(catalog.RunInsert)
	var id int64
	if st.Returning {
		ids, err := e.queryIDs(ctx, e.q, st.Name, st.SQL, p.Name, meta, p.Callbacks)
		if err != nil {
			return nil, e.wrap("insert run", err)
		}
		if len(ids) != 1 {
			return nil, fmt.Errorf("insert run: returned %d ids", len(ids))
		}
		id = ids[0]
	} else {
		res, err := e.exec(ctx, e.q, st.Name, st.SQL, p.Name, meta, p.Callbacks)
		if err != nil {
			return nil, e.wrap("insert run", err)
		}
		id = res.LastInsertID
	}
	return e.getRun(ctx, e.q, id)
}

// RunGet reads one run.
func (e *Executor) RunGet(ctx context.Context, id int64) (*rowtype.RunRow, error) {
	return e.getRun(ctx, e.q, id)
}

func (e *Executor) getRun(ctx context.Context, q Querier, id int64) (*rowtype.RunRow, error) {
	rows, err := e.query(ctx, q, catalog.RunGet, e.cat().Get(catalog.RunGet).SQL, id)
	if err != nil {
		return nil, e.wrap(fmt.Sprintf("get run %d", id), err)
	}
	defer rows.Close()
	if !rows.Next() {
		if err := rows.Err(); err != nil {
			return nil, e.wrap(fmt.Sprintf("get run %d", id), err)
		}
		return nil, fmt.Errorf("run %d: %w", id, rowtype.ErrNotFound)
	}
	r, err := scanRun(rows)
	return r, e.wrap(fmt.Sprintf("get run %d", id), err)
}

// RunCounts counts a run's jobs by status through the run index.
func (e *Executor) RunCounts(ctx context.Context, id int64) (rowtype.RunCounts, error) {
	counts, err := e.runCounts(ctx, e.q, id)
	return counts, e.wrap(fmt.Sprintf("count run %d", id), err)
}
