package chaos

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/lockstep-queue/lockstep"
	"github.com/lockstep-queue/lockstep/driver"
	"github.com/lockstep-queue/lockstep/internal/dsn"
	"github.com/lockstep-queue/lockstep/internal/statusaudit"
	"github.com/lockstep-queue/lockstep/rowtype"
)

// The limited queue under kill -9: a queue with a global concurrency limit
// worked by several `lockstep work` processes, one of which is killed with
// SIGKILL while it holds slots. Its jobs stay RUNNING until their
// heartbeats are ReapAfter old and a survivor's reaper returns them; until
// then they hold their slots, so the survivors may run only the limit less
// what the dead process held; after the reap the queue runs at its limit
// again, and every job ends DONE once.
//
// Every step waits on what the database shows (RUNNING jobs, the ledger
// rows of each process's executions), never on time. What is checked:
//
//   - a sampler reads the queue's RUNNING jobs every SampleEvery: never
//     more than the limit; while the dead process's jobs are RUNNING, the
//     survivors' never more than the limit less those, and that many at
//     some reading (the limit binds them, not their workers); after the
//     reap, the limit at some reading (the slots came back);
//   - the audit (a trigger's record of every status change, with the
//     database's clock): no instant with more RUNNING jobs than the limit;
//   - the ledger (each execution's start and end, the workers' clocks, a
//     killed execution held until the reap that returned it): no instant
//     with more executions than the limit;
//   - the chaos checks (Check): every job DONE, its final state written
//     once, no attempt executed twice, only the killed process's jobs run
//     again.

// LimitConfig configures RunLimited. Zero values take the documented
// defaults.
type LimitConfig struct {
	// Binary, DSN, Env and LogDir are as in Config; the DSN's schema must
	// be migrated and hold no job.
	Binary, DSN string
	Env         []string
	LogDir      string

	// Queue is the limited queue. Default "chaos_limited".
	Queue string
	// Limit is its global concurrency limit. Default 5.
	Limit int
	// Processes working it, and Workers each (their MaxWorkers): the
	// survivors of one kill must have more workers than the limit, or the
	// limit would not be what holds them. Defaults 3 and 3 (fewer workers
	// than the limit: the first process to claim cannot take it all).
	Processes, Workers int
	// Jobs enqueued, each working WorkMillis. Defaults 60 and 2000.
	Jobs, WorkMillis int
	// The processes' timings. Defaults: Heartbeat 300ms, ReapAfter 3s,
	// Poll 100ms.
	Heartbeat, ReapAfter, Poll time.Duration
	// SampleEvery is the sampler's period. Default 25ms.
	SampleEvery time.Duration
	// Timeout bounds the run. Default 5 minutes.
	Timeout time.Duration
	// Progress, when set, receives a line at each step.
	Progress io.Writer
}

func (c LimitConfig) withDefaults() (LimitConfig, error) {
	if c.Binary == "" || c.DSN == "" || c.LogDir == "" {
		return c, errors.New("chaos: LimitConfig.Binary, DSN and LogDir are required")
	}
	if c.Queue == "" {
		c.Queue = "chaos_limited"
	}
	for _, d := range []struct {
		v   *int
		def int
	}{{&c.Limit, 5}, {&c.Processes, 3}, {&c.Workers, 3}, {&c.Jobs, 60}, {&c.WorkMillis, 2000}} {
		if *d.v == 0 {
			*d.v = d.def
		}
	}
	for _, d := range []struct {
		v   *time.Duration
		def time.Duration
	}{{&c.Heartbeat, 300 * time.Millisecond}, {&c.ReapAfter, 3 * time.Second}, {&c.Poll, 100 * time.Millisecond},
		{&c.SampleEvery, 25 * time.Millisecond}, {&c.Timeout, 5 * time.Minute}} {
		if *d.v == 0 {
			*d.v = d.def
		}
	}
	switch {
	case c.Limit < 2:
		return c, fmt.Errorf("chaos: Limit must be at least 2 (the killed process holds slots, the survivors run the rest), got %d", c.Limit)
	case c.Processes < 2:
		return c, fmt.Errorf("chaos: Processes must be at least 2, got %d", c.Processes)
	case (c.Processes-1)*c.Workers <= c.Limit:
		return c, fmt.Errorf("chaos: the survivors' workers, %d×%d, must exceed the limit %d, or the limit would not be what holds them",
			c.Processes-1, c.Workers, c.Limit)
	case c.Jobs < 4*c.Limit:
		return c, fmt.Errorf("chaos: Jobs must be at least 4×Limit (%d) to keep the queue at its limit through the kill and the reap, got %d", 4*c.Limit, c.Jobs)
	case c.ReapAfter <= 2*c.Heartbeat:
		return c, fmt.Errorf("chaos: ReapAfter (%s) must exceed twice Heartbeat (%s)", c.ReapAfter, c.Heartbeat)
	}
	return c, nil
}

// LimitResult is what RunLimited did and found.
type LimitResult struct {
	Dialect string
	Limit   int
	// Killed is the pid sent SIGKILL; Held the slots its jobs held (the
	// attempts the reaper returned).
	Killed, Held int
	// Samples taken: in all, while the killed process's jobs were all
	// still RUNNING, and after the reap.
	Samples, HeldSamples, AfterReapSamples int
	// MaxRunning: the most RUNNING jobs at one reading. MaxSurvivorsHeld:
	// the survivors' most while the dead process's jobs held their slots.
	// MaxAfterReap: the most after the reap.
	MaxRunning, MaxSurvivorsHeld, MaxAfterReap int
	// MaxAuditRunning and MaxLedgerRunning: the most RUNNING jobs at one
	// instant by the audit (database clock), and executions by the ledger
	// (workers' clocks, a killed execution lasting until its reap).
	MaxAuditRunning, MaxLedgerRunning int
	// Held phase, by the sampler's clock: from the kill to the reap.
	HeldFor time.Duration
	// Check is the chaos checks' result over every job.
	Check *Result
	// Problems: every broken promise, Check's included.
	Problems []string
}

// OK reports whether the run found no problem.
func (r *LimitResult) OK() bool { return len(r.Problems) == 0 }

func (r *LimitResult) String() string {
	s := fmt.Sprintf("%s: limit %d; killed pid %d holding %d slots; %d samples (%d while held, %d after the reap): most RUNNING %d, survivors' most while held %d, most after the reap %d; "+
		"audit most RUNNING %d, ledger most executions %d; held for %s; %d problems",
		r.Dialect, r.Limit, r.Killed, r.Held, r.Samples, r.HeldSamples, r.AfterReapSamples, r.MaxRunning, r.MaxSurvivorsHeld, r.MaxAfterReap,
		r.MaxAuditRunning, r.MaxLedgerRunning, r.HeldFor.Round(time.Millisecond), len(r.Problems))
	if r.Check != nil {
		s += "\n" + r.Check.String()
	}
	return s
}

func (r *LimitResult) problem(format string, args ...any) {
	r.Problems = append(r.Problems, fmt.Sprintf(format, args...))
}

// sample is one reading of the queue's RUNNING jobs.
type sample struct {
	at      time.Time
	running []attemptRef
}

type attemptRef struct {
	id      int64
	attempt int
}

// limitRun is one RunLimited's state.
type limitRun struct {
	cfg     LimitConfig
	drv     driver.Driver
	res     *LimitResult
	procs   []*proc
	started int

	mu      sync.Mutex
	samples []sample
	sampErr error
	// killedAt is when the kill that counts was sent (by the sampler's
	// clock); reapedBefore the attempts reaped before it, the earlier
	// kills' (those whose processes finished their jobs as they died).
	killedAt     time.Time
	reapedBefore map[attemptRef]time.Time
}

// RunLimited runs the limited queue under kill -9 and checks what it left.
// The error is for a run that could not be carried out; broken promises
// are in LimitResult.Problems.
func RunLimited(ctx context.Context, cfg LimitConfig) (*LimitResult, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, cfg.Timeout)
	defer cancel()
	drv, err := dsn.Open(ctx, cfg.DSN)
	if err != nil {
		return nil, fmt.Errorf("chaos: %w", err)
	}
	defer func() { _ = drv.Close() }()
	var existing int
	if err := drv.DB().QueryRowContext(ctx, "SELECT COUNT(*) FROM lockstep_jobs").Scan(&existing); err != nil {
		return nil, fmt.Errorf("chaos: count existing jobs (is the schema migrated?): %w", err)
	}
	if existing > 0 {
		return nil, fmt.Errorf("chaos: the database already holds %d jobs; the run checks every job, so it needs an empty queue", existing)
	}
	if err := InstallLedger(ctx, drv); err != nil {
		return nil, err
	}
	if err := statusaudit.Install(ctx, drv); err != nil {
		return nil, fmt.Errorf("chaos: %w", err)
	}
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = statusaudit.Drop(ctx, drv)
	}()
	r := &limitRun{cfg: cfg, drv: drv, res: &LimitResult{Dialect: drv.Dialect(), Limit: cfg.Limit}}
	// The limit is set before any process starts: each reads it at its
	// Start (a process that had not read it yet would claim unlimited).
	client, err := lockstep.NewClient(drv, lockstep.Config{})
	if err != nil {
		return nil, fmt.Errorf("chaos: %w", err)
	}
	if err := client.SetQueueLimits(ctx, cfg.Queue, lockstep.QueueLimits{Concurrency: cfg.Limit}); err != nil {
		return nil, fmt.Errorf("chaos: %w", err)
	}
	known := Known{Jobs: map[int64]int64{}, CancelledRuns: map[int64]bool{}, Killed: map[int]bool{}}
	params := make([]lockstep.InsertManyParams, cfg.Jobs)
	for i := range params {
		params[i] = lockstep.InsertManyParams{Args: LedgerArgs{Millis: cfg.WorkMillis}, Opts: &lockstep.InsertOpts{Queue: cfg.Queue, MaxAttempts: 100}}
	}
	inserted, err := client.InsertMany(ctx, params)
	if err != nil {
		return nil, fmt.Errorf("chaos: enqueue: %w", err)
	}
	for _, j := range inserted {
		known.Jobs[j.ID] = 0
	}

	runErr := r.run(ctx, known)
	stopErr := r.stopAll()
	if err := errors.Join(runErr, stopErr); err != nil {
		return r.res, err
	}
	if err := r.check(ctx, known); err != nil {
		return r.res, err
	}
	return r.res, nil
}

func (r *limitRun) progress(format string, args ...any) {
	if r.cfg.Progress != nil {
		fmt.Fprintf(r.cfg.Progress, "chaos limit %s: "+format+"\n", append([]any{r.drv.Dialect()}, args...)...)
	}
}

// ph is the n-th placeholder in the dialect.
func (r *limitRun) ph(n int) string {
	if r.drv.Dialect() == "postgres" {
		return "$" + strconv.Itoa(n)
	}
	return "?"
}

func (r *limitRun) start(slot int) error {
	r.started++
	log := filepath.Join(r.cfg.LogDir, fmt.Sprintf("limited-worker-%d-%d.log", slot, r.started))
	f, err := os.Create(log)
	if err != nil {
		return fmt.Errorf("chaos: %w", err)
	}
	cmd := exec.Command(r.cfg.Binary, "work", "--kind", LedgerKind, "--queue", r.cfg.Queue,
		"--workers", strconv.Itoa(r.cfg.Workers),
		"--heartbeat", r.cfg.Heartbeat.String(), "--reap-after", r.cfg.ReapAfter.String(),
		"--poll", r.cfg.Poll.String(), "--stop-timeout", "60s")
	cmd.Env = append(append(os.Environ(), "LOCKSTEP_DSN="+r.cfg.DSN), r.cfg.Env...)
	cmd.Stdout, cmd.Stderr = f, f
	if err := cmd.Start(); err != nil {
		_ = f.Close()
		return fmt.Errorf("chaos: start worker: %w", err)
	}
	p := &proc{cmd: cmd, done: make(chan error, 1), log: log}
	go func() {
		p.done <- cmd.Wait()
		_ = f.Close()
	}()
	r.procs[slot] = p
	return nil
}

// running reads the queue's RUNNING jobs, by id.
func (r *limitRun) running(ctx context.Context) ([]attemptRef, error) {
	rows, err := r.drv.DB().QueryContext(ctx, "SELECT id, attempts FROM lockstep_jobs WHERE queue = "+r.ph(1)+" AND status = 'RUNNING' ORDER BY id", r.cfg.Queue)
	if err != nil {
		return nil, fmt.Errorf("chaos: read RUNNING jobs: %w", err)
	}
	defer rows.Close()
	var out []attemptRef
	for rows.Next() {
		var a attemptRef
		if err := rows.Scan(&a.id, &a.attempt); err != nil {
			return nil, fmt.Errorf("chaos: read RUNNING jobs: %w", err)
		}
		out = append(out, a)
	}
	return out, rows.Err()
}

// holding is one RUNNING job whose current attempt a process's ledger
// shows started: a slot that process holds.
type holding struct {
	a       attemptRef
	started time.Time // the worker's clock
	ended   bool      // the work is done; the job is still RUNNING
}

// heldBy reads, per pid, the slots each process holds.
func (r *limitRun) heldBy(ctx context.Context) (map[int][]holding, error) {
	rows, err := r.drv.DB().QueryContext(ctx, "SELECT l.pid, j.id, j.attempts, l.started_at, l.ended_at FROM "+LedgerTable+" l JOIN lockstep_jobs j ON j.id = l.job_id AND j.attempts = l.attempt"+
		" WHERE j.queue = "+r.ph(1)+" AND j.status = 'RUNNING'", r.cfg.Queue)
	if err != nil {
		return nil, fmt.Errorf("chaos: read held slots: %w", err)
	}
	defer rows.Close()
	out := map[int][]holding{}
	for rows.Next() {
		var pid int
		var h holding
		var ended sql.NullTime
		if err := rows.Scan(&pid, &h.a.id, &h.a.attempt, &h.started, &ended); err != nil {
			return nil, fmt.Errorf("chaos: read held slots: %w", err)
		}
		h.ended = ended.Valid
		out[pid] = append(out[pid], h)
	}
	return out, rows.Err()
}

// sampleLoop reads the RUNNING jobs every SampleEvery until stop closes.
func (r *limitRun) sampleLoop(ctx context.Context, stop <-chan struct{}) {
	tick := time.NewTicker(r.cfg.SampleEvery)
	defer tick.Stop()
	for {
		run, err := r.running(ctx)
		at := time.Now()
		r.mu.Lock()
		if err != nil {
			if r.sampErr == nil && ctx.Err() == nil {
				r.sampErr = err
			}
		} else {
			r.samples = append(r.samples, sample{at: at, running: run})
		}
		r.mu.Unlock()
		select {
		case <-stop:
			return
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// waitFor polls cond every 20 ms until it holds, a process exits, or ctx
// ends.
func (r *limitRun) waitFor(ctx context.Context, what string, cond func() (bool, error)) error {
	for {
		ok, err := cond()
		if err != nil || ok {
			return err
		}
		for i, p := range r.procs {
			if p == nil || p.killed {
				continue
			}
			select {
			case err := <-p.done:
				p.done <- err
				return fmt.Errorf("chaos: worker process %d (pid %d) exited by itself while waiting for %s: %v; its log (%s) ends:\n%s", i, p.cmd.Process.Pid, what, err, p.log, logTail(p.log))
			default:
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("chaos: waiting for %s: %w", what, ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

func (r *limitRun) run(ctx context.Context, known Known) error {
	cfg := r.cfg
	r.procs = make([]*proc, cfg.Processes)
	stop := make(chan struct{})
	var sampler sync.WaitGroup
	sampler.Go(func() { r.sampleLoop(ctx, stop) })
	defer func() {
		close(stop)
		sampler.Wait()
	}()
	for i := range r.procs {
		if err := r.start(i); err != nil {
			return err
		}
	}
	// 1–2. Kill a process that holds two slots or more; try again, with a
	// process started in its place, if its jobs ended before it died.
	const tries = 5
	var victim int
	var held []attemptRef
	for try := 1; ; try++ {
		var err error
		if victim, err = r.pickVictim(ctx); err != nil {
			return err
		}
		// Recorded first: what it left undone is the kill's.
		known.Killed[victim] = true
		if r.reapedBefore, err = reapedAttempts(ctx, r.drv); err != nil {
			return err
		}
		slot := slices.IndexFunc(r.procs, func(p *proc) bool { return p != nil && !p.killed && p.cmd.Process.Pid == victim })
		p := r.procs[slot]
		if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
			return fmt.Errorf("chaos: kill pid %d: %w", victim, err)
		}
		<-p.done
		p.killed = true
		killed := time.Now()
		// What it holds now that it is dead: its RUNNING jobs (a job it
		// claimed and had not begun is found later, among the reaped).
		by, err := r.heldBy(ctx)
		if err != nil {
			return err
		}
		held = held[:0]
		for _, h := range by[victim] {
			held = append(held, h.a)
		}
		r.progress("killed pid %d while it held %d slots %v", victim, len(held), held)
		if len(held) >= 2 {
			r.res.Killed = victim
			r.mu.Lock()
			r.killedAt = killed
			r.mu.Unlock()
			break
		}
		if try == tries {
			return fmt.Errorf("chaos: %d processes killed while they held two jobs or more, each had finished all but %d once dead: is the machine stalling them?", tries, len(held))
		}
		// Its jobs, if any, reaped before the next kill; a process in its
		// place.
		if err := r.waitReaped(ctx, victim, held); err != nil {
			return err
		}
		if err := r.start(slot); err != nil {
			return err
		}
	}

	// 3. Its jobs stay RUNNING until the survivors' reaper returns them.
	if err := r.waitReaped(ctx, victim, held); err != nil {
		return err
	}
	r.mu.Lock()
	r.res.HeldFor = time.Since(r.killedAt)
	r.mu.Unlock()
	r.progress("pid %d's jobs reaped after %s", victim, r.res.HeldFor.Round(time.Millisecond))

	// 4. The slots come back: the survivors run the limit again.
	err := r.waitFor(ctx, fmt.Sprintf("%d jobs RUNNING again after the reap", cfg.Limit), func() (bool, error) {
		run, err := r.running(ctx)
		return len(run) >= cfg.Limit, err
	})
	if err != nil {
		return err
	}
	r.progress("%d RUNNING again", cfg.Limit)

	// 5. Every job done.
	return r.waitFor(ctx, "every job to be DONE", func() (bool, error) {
		var open int
		err := r.drv.DB().QueryRowContext(ctx, "SELECT COUNT(*) FROM lockstep_jobs WHERE status <> 'DONE'").Scan(&open)
		return open == 0, err
	})
}

// pickVictim waits until the queue runs at its limit and a live process
// holds two slots or more whose work has not ended, and returns the one
// holding fewest of them: the survivors then have the most slots left to
// run in, and more workers still.
func (r *limitRun) pickVictim(ctx context.Context) (int, error) {
	cfg := r.cfg
	var victim int
	err := r.waitFor(ctx, fmt.Sprintf("%d jobs RUNNING and a process holding two of them", cfg.Limit), func() (bool, error) {
		var pending int
		if err := r.drv.DB().QueryRowContext(ctx, "SELECT COUNT(*) FROM lockstep_jobs WHERE status = 'PENDING'").Scan(&pending); err != nil {
			return false, err
		}
		run, err := r.running(ctx)
		if err != nil {
			return false, err
		}
		if pending == 0 {
			return false, errors.New("chaos: the jobs ran out before a process held two at the limit: more jobs, or longer ones")
		}
		if len(run) < cfg.Limit {
			return false, nil
		}
		by, err := r.heldBy(ctx)
		if err != nil {
			return false, err
		}
		victim = 0
		fewest := cfg.Limit + 1
		for _, p := range r.procs {
			if p.killed {
				continue
			}
			pid := p.cmd.Process.Pid
			n := 0
			for _, h := range by[pid] {
				if !h.ended {
					n++
				}
			}
			if n >= 2 && n < fewest {
				victim, fewest = pid, n
			}
		}
		return victim != 0, nil
	})
	return victim, err
}

// waitReaped waits until none of a killed process's jobs is RUNNING at the
// attempt it held.
func (r *limitRun) waitReaped(ctx context.Context, pid int, held []attemptRef) error {
	return r.waitFor(ctx, fmt.Sprintf("the reap of pid %d's jobs", pid), func() (bool, error) {
		run, err := r.running(ctx)
		if err != nil {
			return false, err
		}
		for _, h := range held {
			if slices.Contains(run, h) {
				return false, nil
			}
		}
		return true, nil
	})
}

// reapedAttempts are the attempts the reaper has returned so far, with
// the time of each return (the audit's, the database's clock).
func reapedAttempts(ctx context.Context, drv driver.Driver) (map[attemptRef]time.Time, error) {
	audit, _, err := statusaudit.Read(ctx, drv)
	if err != nil {
		return nil, fmt.Errorf("chaos: %w", err)
	}
	out := map[attemptRef]time.Time{}
	for id, trs := range audit {
		for _, t := range trs {
			if t.From == rowtype.StatusRunning && t.To == rowtype.StatusPending && t.Errored {
				out[attemptRef{id, t.Attempts}] = t.ChangedAt
			}
		}
	}
	return out, nil
}

// stopAll stops the live processes with SIGTERM: each must exit 0.
func (r *limitRun) stopAll() error {
	var errs []error
	for _, p := range r.procs {
		if p != nil && !p.killed {
			p.terminate()
		}
	}
	for i, p := range r.procs {
		if p == nil || p.killed {
			continue
		}
		select {
		case err := <-p.done:
			if err != nil {
				errs = append(errs, fmt.Errorf("chaos: worker process %d (pid %d) exited with %v after SIGTERM; its log: %s", i, p.cmd.Process.Pid, err, p.log))
			}
		case <-time.After(90 * time.Second):
			_ = p.cmd.Process.Kill()
			errs = append(errs, fmt.Errorf("chaos: worker process %d (pid %d) did not exit within 90s of SIGTERM; its log: %s", i, p.cmd.Process.Pid, p.log))
		}
	}
	return errors.Join(errs...)
}

// check reads the records and judges them.
func (r *limitRun) check(ctx context.Context, known Known) error {
	res, cfg := r.res, r.cfg
	chk, err := Check(ctx, r.drv, known)
	if err != nil {
		return err
	}
	chk.Started = r.started
	res.Check = chk
	res.Problems = append(res.Problems, chk.Problems...)
	if chk.Done != len(known.Jobs) {
		res.problem("%d of %d jobs DONE", chk.Done, len(known.Jobs))
	}
	audit, _, err := statusaudit.Read(ctx, r.drv)
	if err != nil {
		return fmt.Errorf("chaos: %w", err)
	}
	ledger, _, err := readLedger(ctx, r.drv)
	if err != nil {
		return err
	}
	r.mu.Lock()
	samples, sampErr, killedAt := r.samples, r.sampErr, r.killedAt
	r.mu.Unlock()
	if sampErr != nil {
		return sampErr
	}

	// The dead process's slots: the attempts the reaper returned since the
	// kill that counts, each with the time of its return; an earlier
	// kill's are slots held too, in the ledger's and the audit's account.
	reaped, err := reapedAttempts(ctx, r.drv)
	if err != nil {
		return err
	}
	dead := map[attemptRef]bool{}
	for a := range reaped {
		if _, before := r.reapedBefore[a]; !before {
			dead[a] = true
		}
	}
	res.Held = len(dead)
	if res.Held < 2 {
		res.problem("the reaper returned %d attempts of the killed process; it held two slots or more", res.Held)
	}

	// The sampler's readings.
	reapSeen := false
	for _, s := range samples {
		res.Samples++
		nDead := 0
		for _, a := range s.running {
			if dead[a] {
				nDead++
			}
		}
		n := len(s.running)
		res.MaxRunning = max(res.MaxRunning, n)
		if n > cfg.Limit {
			res.problem("a reading at %s saw %d jobs RUNNING, above the limit of %d", s.at.Format("15:04:05.000"), n, cfg.Limit)
		}
		switch {
		case !s.at.After(killedAt):
		case res.Held > 0 && nDead == res.Held:
			res.HeldSamples++
			res.MaxSurvivorsHeld = max(res.MaxSurvivorsHeld, n-nDead)
			if n-nDead > cfg.Limit-res.Held {
				res.problem("while pid %d's %d jobs held their slots, a reading saw the survivors run %d, above %d", res.Killed, res.Held, n-nDead, cfg.Limit-res.Held)
			}
		case nDead == 0 && reapSeen:
			res.AfterReapSamples++
			res.MaxAfterReap = max(res.MaxAfterReap, n)
		}
		if res.HeldSamples > 0 && nDead == 0 {
			reapSeen = true
		}
	}
	if res.HeldSamples == 0 {
		res.problem("no reading saw the killed process's jobs holding their slots")
	} else if res.MaxSurvivorsHeld != cfg.Limit-res.Held {
		res.problem("while the killed process held %d slots the survivors ran %d at most: want %d (the limit less the held slots; they have more workers than that)",
			res.Held, res.MaxSurvivorsHeld, cfg.Limit-res.Held)
	}
	if res.MaxAfterReap != cfg.Limit {
		res.problem("after the reap the queue ran %d at most at a reading: want %d (the slots come back)", res.MaxAfterReap, cfg.Limit)
	}

	// The audit: RUNNING intervals by the database's clock.
	var ivs []span
	for id, trs := range audit {
		var from time.Time
		for _, t := range trs {
			switch {
			case t.To == rowtype.StatusRunning:
				from = t.ChangedAt
			case t.From == rowtype.StatusRunning:
				ivs = append(ivs, span{from, t.ChangedAt, attemptRef{id, t.Attempts}})
			}
		}
	}
	var at []attemptRef
	res.MaxAuditRunning, at = mostAtOnce(ivs)
	if res.MaxAuditRunning > cfg.Limit {
		res.problem("the audit shows %d jobs RUNNING at once, above the limit of %d: %v", res.MaxAuditRunning, cfg.Limit, at)
	}

	// The ledger: executions by the workers' clocks; a killed one holds
	// its slot until the reap returned its job.
	ivs = ivs[:0]
	for id, execs := range ledger {
		for _, e := range execs {
			a := attemptRef{id, e.attempt}
			end := e.ended
			if t, ok := reaped[a]; ok {
				end = t
			}
			if end.IsZero() {
				res.problem("job %d attempt %d: its execution (pid %d) never ended and was not reaped", id, e.attempt, e.pid)
				continue
			}
			ivs = append(ivs, span{e.started, end, a})
		}
	}
	res.MaxLedgerRunning, at = mostAtOnce(ivs)
	if res.MaxLedgerRunning > cfg.Limit {
		res.problem("the ledger shows %d executions at once, above the limit of %d: %v", res.MaxLedgerRunning, cfg.Limit, at)
	}
	return nil
}

// span is one attempt's time holding a slot.
type span struct {
	from, to time.Time
	a        attemptRef
}

// mostAtOnce is the most spans open at one instant and theirs; a span
// ending when another begins does not overlap it.
func mostAtOnce(spans []span) (int, []attemptRef) {
	type edge struct {
		at    time.Time
		delta int
		a     attemptRef
	}
	var edges []edge
	for _, s := range spans {
		edges = append(edges, edge{s.from, 1, s.a}, edge{s.to, -1, s.a})
	}
	slices.SortFunc(edges, func(x, y edge) int {
		if c := x.at.Compare(y.at); c != 0 {
			return c
		}
		return x.delta - y.delta
	})
	best, n := 0, 0
	open := map[attemptRef]bool{}
	var at []attemptRef
	for _, e := range edges {
		n += e.delta
		if e.delta > 0 {
			open[e.a] = true
		} else {
			delete(open, e.a)
		}
		if n > best {
			best, at = n, at[:0]
			for a := range open {
				at = append(at, a)
			}
		}
	}
	return best, at
}
