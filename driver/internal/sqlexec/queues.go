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
		if err := rows.Scan(&s.Queue, nullTime{&s.Paused}, nullInt64{&maxWorkers}, nullTime{&s.UpdatedAt}); err != nil {
			rows.Close()
			return nil, e.wrap("queue settings", err)
		}
		s.MaxWorkers = int(maxWorkers)
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
