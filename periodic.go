package lockstep

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/robfig/cron/v3"
)

// PeriodicJob is a job enqueued on a schedule: by Cron or every Interval.
type PeriodicJob struct {
	// Name identifies the schedule. It is part of each tick's unique key:
	// two processes with the same Name enqueue each tick once between
	// them; renaming a schedule starts it afresh.
	Name string
	// Cron is a standard five-field cron expression (minute first), in UTC
	// unless it starts with CRON_TZ=<zone> — never the process's own time
	// zone, so that every process computes the same ticks — or a
	// descriptor such as @hourly or @daily. @every 90s is an Interval.
	Cron string
	// Interval, instead of Cron: a tick at every multiple of Interval since
	// the Unix epoch, the same instants in every process.
	Interval time.Duration
	// Args are each tick's job.
	Args JobArgs
	// Opts for each tick's job: queue, priority, attempts, metadata. The
	// tick sets the scheduled time and the unique key, so ScheduledAt,
	// Delay, RunID and Unique must be unset.
	Opts *InsertOpts
	// CatchUp, when positive, makes Start enqueue the ticks of the last
	// CatchUp that have no job (missed while no process ran), each still
	// once. Default 0: missed ticks are not replayed. Keep it shorter than
	// the retention of the jobs' final status, or ticks whose jobs were
	// deleted are enqueued again.
	CatchUp time.Duration
}

// periodicLateness is how late a tick may be and still be enqueued by a
// running process; older ones count as missed.
const periodicLateness = time.Second

// maxCatchUpTicks bounds what one start replays.
const maxCatchUpTicks = 1000

// schedule is the next tick strictly after t.
type schedule interface{ Next(t time.Time) time.Time }

// utcSchedule evaluates a cron schedule in UTC (or its own CRON_TZ): robfig
// uses the zone of the time it is given.
type utcSchedule struct{ s cron.Schedule }

func (u utcSchedule) Next(t time.Time) time.Time { return u.s.Next(t.UTC()) }

type intervalSchedule time.Duration

func (s intervalSchedule) Next(t time.Time) time.Time {
	d := int64(s)
	n := t.UnixNano()
	next := (n/d + 1) * d
	if n < 0 && n%d != 0 {
		next -= d
	}
	return time.Unix(0, next).UTC()
}

// parseSchedule checks a periodic job and returns its schedule.
func (p *PeriodicJob) parseSchedule() (schedule, error) {
	if err := validName("periodic job", p.Name); err != nil {
		return nil, err
	}
	if p.Args == nil {
		return nil, fmt.Errorf("periodic job %q: no Args", p.Name)
	}
	if p.CatchUp < 0 {
		return nil, fmt.Errorf("periodic job %q: CatchUp must not be negative", p.Name)
	}
	if o := p.Opts; o != nil && (!o.ScheduledAt.IsZero() || o.Delay != 0 || o.RunID != 0 || o.Unique != nil) {
		return nil, fmt.Errorf("periodic job %q: Opts must not set ScheduledAt, Delay, RunID or Unique: each tick sets them", p.Name)
	}
	switch {
	case p.Cron != "" && p.Interval != 0:
		return nil, fmt.Errorf("periodic job %q: give Cron or Interval, not both", p.Name)
	case p.Cron != "":
		s, err := cron.ParseStandard(p.Cron)
		if err != nil {
			return nil, fmt.Errorf("periodic job %q: cron %q: %w", p.Name, p.Cron, err)
		}
		if every, ok := s.(cron.ConstantDelaySchedule); ok {
			// robfig counts @every from the time it is asked, so each
			// process would have its own ticks; align them to the epoch.
			return intervalSchedule(every.Delay), nil
		}
		utc := utcSchedule{s}
		if utc.Next(time.Now()).IsZero() {
			return nil, fmt.Errorf("periodic job %q: cron %q never fires", p.Name, p.Cron)
		}
		return utc, nil
	case p.Interval >= time.Millisecond:
		return intervalSchedule(p.Interval), nil
	case p.Interval != 0:
		return nil, fmt.Errorf("periodic job %q: Interval must be at least 1ms, got %s", p.Name, p.Interval)
	}
	return nil, fmt.Errorf("periodic job %q: give Cron or Interval", p.Name)
}

// periodicEntry is a checked periodic job.
type periodicEntry struct {
	job   PeriodicJob
	sched schedule
}

func parsePeriodic(jobs []PeriodicJob) ([]periodicEntry, error) {
	seen := map[string]bool{}
	var out []periodicEntry
	for _, j := range jobs {
		s, err := j.parseSchedule()
		if err != nil {
			return nil, fmt.Errorf("config: %w", err)
		}
		if seen[j.Name] {
			return nil, fmt.Errorf("config: periodic job %q is declared twice", j.Name)
		}
		seen[j.Name] = true
		out = append(out, periodicEntry{job: j, sched: s})
	}
	return out, nil
}

// allStatuses keeps a tick's key for the job's whole life: a tick whose job
// already ran is not enqueued again.
var allStatuses = []JobStatus{StatusPending, StatusRunning, StatusDone, StatusFailed, StatusCancelled}

// enqueueTick enqueues one tick's job; a duplicate means another process
// (or an earlier start) already did.
func (c *Client) enqueueTick(ctx context.Context, e *periodicEntry, tick time.Time) (*InsertResult, error) {
	o := InsertOpts{}
	if e.job.Opts != nil {
		o = *e.job.Opts
	}
	o.ScheduledAt = tick
	o.Unique = &UniqueOpts{Key: "periodic\x00" + e.job.Name + "\x00" + tick.UTC().Format(time.RFC3339Nano), ByStatus: allStatuses}
	res, err := c.Insert(ctx, e.job.Args, &o)
	if err != nil {
		return nil, fmt.Errorf("periodic job %q, tick %s: %w", e.job.Name, tick.UTC().Format(time.RFC3339Nano), err)
	}
	if res.Duplicate {
		c.emit(Event{Kind: EventPeriodicDuplicate, Queue: o.Queue, JobKind: e.job.Args.Kind()})
	}
	return res, nil
}

// catchUp enqueues the ticks of the last CatchUp before now: the newest
// maxCatchUpTicks of them, oldest first.
func (c *Client) catchUp(ctx context.Context, e *periodicEntry, now time.Time) error {
	if e.job.CatchUp <= 0 {
		return nil
	}
	from := now.Add(-e.job.CatchUp)
	if iv, ok := e.sched.(intervalSchedule); ok {
		// Start near the end rather than walk millions of short ticks.
		from = maxTime(from, now.Add(-time.Duration(iv)*maxCatchUpTicks))
	}
	var ticks []time.Time
	for t := e.sched.Next(from); !t.IsZero() && !t.After(now); t = e.sched.Next(t) {
		if len(ticks) == maxCatchUpTicks {
			ticks = append(ticks[:0], ticks[1:]...)
		}
		ticks = append(ticks, t)
	}
	var errs []error
	for _, t := range ticks {
		if _, err := c.enqueueTick(ctx, e, t); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// periodicLoop enqueues each tick after from as its time comes. Ticks
// that pass while the process cannot run (suspended, or an insert that
// took longer than an interval) are skipped, as during downtime.
func (c *Client) periodicLoop(ctx context.Context, e *periodicEntry, from time.Time) {
	next := e.sched.Next(from)
	if next.IsZero() {
		return // a cron expression with no future time
	}
	timer := time.NewTimer(time.Until(next))
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-timer.C:
		}
		if _, err := c.enqueueTick(ctx, e, next); err != nil && ctx.Err() == nil {
			// Another process may have enqueued it; if none did, the tick
			// is missed, as during downtime.
			c.logger.Error("lockstep: periodic job not enqueued", "name", e.job.Name, "err", err)
		}
		next = e.sched.Next(next)
		if late := time.Now().Add(-periodicLateness); !next.IsZero() && next.Before(late) {
			c.logger.Warn("lockstep: periodic job fell behind; skipping the ticks it missed", "name", e.job.Name, "from", next)
			next = e.sched.Next(late)
		}
		if next.IsZero() {
			return
		}
		timer.Reset(time.Until(next))
	}
}
