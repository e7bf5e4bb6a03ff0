package sqlexec

import (
	"context"
	"errors"
	"fmt"

	"github.com/lockstep-queue/lockstep/driver/catalog"
	"github.com/lockstep-queue/lockstep/rowtype"
)

// QueueSettings implements driver.Executor.
func (e *Executor) QueueSettings(ctx context.Context) ([]rowtype.QueueSettings, error) {
	rows, err := e.query(ctx, e.q, catalog.QueueSettingsList, e.cat().Get(catalog.QueueSettingsList).SQL)
	if err != nil {
		return nil, e.wrap("queue settings", err)
	}
	var out []rowtype.QueueSettings
	for rows.Next() {
		var s rowtype.QueueSettings
		var maxWorkers int64
		var lim limitCols
		if err := rows.Scan(append([]any{&s.Queue, nullTime{&s.Paused}, nullInt64{&maxWorkers}, nullTime{&s.UpdatedAt}}, lim.dest()...)...); err != nil {
			rows.Close()
			return nil, e.wrap("queue settings", err)
		}
		s.MaxWorkers, s.Limits = int(maxWorkers), lim.limits()
		out = append(out, s)
	}
	if err := errors.Join(rows.Err(), rows.Close()); err != nil {
		return nil, e.wrap("queue settings", err)
	}
	return out, nil
}

// QueuePause implements driver.Executor.
func (e *Executor) QueuePause(ctx context.Context, queue string, paused bool) error {
	name, op := catalog.QueueResume, "resume queue"
	if paused {
		name, op = catalog.QueuePause, "pause queue"
	}
	_, err := e.exec(ctx, e.q, name, e.cat().Get(name).SQL, queue)
	return e.wrap(fmt.Sprintf("%s %q", op, queue), err)
}

// QueueSetMaxWorkers implements driver.Executor.
func (e *Executor) QueueSetMaxWorkers(ctx context.Context, queue string, n int) error {
	var v any
	if n > 0 {
		v = n
	}
	_, err := e.exec(ctx, e.q, catalog.QueueSetMaxWorkers, e.cat().Get(catalog.QueueSetMaxWorkers).SQL, queue, v)
	return e.wrap(fmt.Sprintf("set max workers of queue %q", queue), err)
}

// QueueDelete implements driver.Executor.
func (e *Executor) QueueDelete(ctx context.Context, queue string) (bool, error) {
	res, err := e.exec(ctx, e.q, catalog.QueueDelete, e.cat().Get(catalog.QueueDelete).SQL, queue)
	if err != nil {
		return false, e.wrap(fmt.Sprintf("remove queue %q", queue), err)
	}
	return res.RowsAffected > 0, nil
}
