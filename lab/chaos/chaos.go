// Package chaos is the process chaos test: the proof that kill -9 loses
// no job and finishes none twice.
//
// It enqueues jobs in runs, starts several `lockstep work --kind ledger`
// processes on them, and while they work it kills one at random with
// SIGKILL every few seconds and starts another, and cancels a few runs
// half way. The reaper's heartbeat limit is seconds, so killed processes'
// jobs come back quickly. When every job has reached a final state it
// stops the processes and checks three records against what it knows of
// its own accord (the jobs it enqueued, the runs it cancelled, the pids
// it killed): the final rows; the status audit, written by a trigger in
// the transaction of every status change; and the ledger, where each
// execution records its start and its end in statements of its own.
package chaos

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/lockstep-queue/lockstep"
	"github.com/lockstep-queue/lockstep/driver"
	"github.com/lockstep-queue/lockstep/internal/dsn"
	"github.com/lockstep-queue/lockstep/internal/statusaudit"
	"github.com/lockstep-queue/lockstep/rowtype"
)

// Config configures a chaos run. Zero values take the documented defaults.
type Config struct {
	// Binary is the lockstep binary the worker processes run. Required.
	Binary string
	// DSN is the database, in lockstep's DSN forms; the processes get it
	// in $LOCKSTEP_DSN. It must hold a migrated schema with no jobs.
	DSN string
	// Env is added to the processes' environment.
	Env []string
	// LogDir receives each process's output, one file per process.
	// Required.
	LogDir string

	// Processes working at once. Default 4.
	Processes int
	// Workers per process. Default 10.
	Workers int
	// Jobs to enqueue. Default 5,000.
	Jobs int
	// RunSize is the number of jobs per run. Default 100.
	RunSize int
	// WorkMillis is the mean time a job works; each job's time is uniform
	// in [0, 2×WorkMillis]. Default 20.
	WorkMillis int
	// KillMin and KillMax bound the wait between kills. Default 1s and 3s.
	KillMin, KillMax time.Duration
	// CancelRuns is the number of runs cancelled half way. Default 3.
	CancelRuns int
	// WorkflowEvery makes every n-th run a workflow with the three
	// callbacks (see workflowRun). Default 2; negative: no workflows.
	WorkflowEvery int

	// The worker processes' timings. Defaults: Heartbeat 300ms, ReapAfter
	// 3s, Poll 200ms.
	Heartbeat, ReapAfter, Poll time.Duration

	// Timeout bounds the whole run. Default 10 minutes.
	Timeout time.Duration
	// Seed seeds every random choice: which process dies when, how long
	// each job works.
	Seed uint64
	// Progress, when set, receives a line a second.
	Progress io.Writer
}

func (c Config) withDefaults() (Config, error) {
	if c.Binary == "" || c.DSN == "" || c.LogDir == "" {
		return c, errors.New("chaos: Config.Binary, DSN and LogDir are required")
	}
	defInt := func(v *int, d int) {
		if *v == 0 {
			*v = d
		}
	}
	defInt(&c.Processes, 4)
	defInt(&c.Workers, 10)
	defInt(&c.Jobs, 5000)
	defInt(&c.RunSize, 100)
	defInt(&c.WorkMillis, 20)
	defInt(&c.CancelRuns, 3)
	defInt(&c.WorkflowEvery, 2)
	defDur := func(v *time.Duration, d time.Duration) {
		if *v == 0 {
			*v = d
		}
	}
	defDur(&c.KillMin, time.Second)
	defDur(&c.KillMax, 3*time.Second)
	defDur(&c.Heartbeat, 300*time.Millisecond)
	defDur(&c.ReapAfter, 3*time.Second)
	defDur(&c.Poll, 200*time.Millisecond)
	defDur(&c.Timeout, 10*time.Minute)
	switch {
	case c.Processes < 2:
		return c, fmt.Errorf("chaos: Processes must be at least 2 (one is always alive while another restarts), got %d", c.Processes)
	case c.Jobs < 1 || c.RunSize < 1 || c.Workers < 1 || c.WorkMillis < 0 || c.CancelRuns < 0:
		return c, errors.New("chaos: Jobs, RunSize and Workers must be positive; WorkMillis and CancelRuns not negative")
	case c.KillMin <= 0 || c.KillMax < c.KillMin:
		return c, fmt.Errorf("chaos: need 0 < KillMin <= KillMax, got %s and %s", c.KillMin, c.KillMax)
	case c.ReapAfter <= 2*c.Heartbeat:
		return c, fmt.Errorf("chaos: ReapAfter (%s) must exceed twice Heartbeat (%s)", c.ReapAfter, c.Heartbeat)
	}
	return c, nil
}

// Result is what a chaos run did and found.
type Result struct {
	Dialect string
	// Jobs enqueued (callbacks included), in Runs runs; RunsCancelled of
	// them cancelled.
	Jobs, Runs, RunsCancelled int
	// Workflows: runs whose jobs depend on one another, each with three
	// callbacks (Callbacks in all, CallbacksFired of them fired);
	// Promotions: WAITING jobs made PENDING (callbacks included).
	Workflows, Callbacks, CallbacksFired, Promotions int
	// Final states.
	Done, Cancelled int
	// Kills: processes sent SIGKILL. Started: processes started in all.
	Kills, Started int
	// Executions: ledger rows (a worker began the job); Completions: of
	// them, those that recorded their end.
	Executions, Completions int
	// ReExecuted: jobs executed more than once (each time because the
	// process running it was killed). Reaps: audited returns of a RUNNING
	// job to PENDING by the reaper.
	ReExecuted, Reaps int
	// Wall: from the first process start until every job was final.
	Wall time.Duration
	// Problems: every broken promise found, up to 50; ProblemCount counts
	// them all.
	Problems     []string
	ProblemCount int
}

// OK reports whether the run found no problem.
func (r *Result) OK() bool { return r.ProblemCount == 0 }

func (r *Result) String() string {
	return fmt.Sprintf("%s: %d jobs in %d runs (%d cancelled; %d workflows, %d promotions, %d of %d callbacks fired): %d DONE, %d CANCELLED; %d processes started, %d killed; "+
		"%d executions (%d completed), %d jobs re-executed, %d reaps; %s; %d problems",
		r.Dialect, r.Jobs, r.Runs, r.RunsCancelled, r.Workflows, r.Promotions, r.CallbacksFired, r.Callbacks, r.Done, r.Cancelled, r.Started, r.Kills,
		r.Executions, r.Completions, r.ReExecuted, r.Reaps, r.Wall.Round(time.Millisecond), r.ProblemCount)
}

// Run runs the chaos and checks what it left. The error is for a run that
// could not be carried out; broken promises are in Result.Problems.
func Run(ctx context.Context, cfg Config) (*Result, error) {
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
		return nil, fmt.Errorf("chaos: the database already holds %d jobs; the chaos run checks every job, so it needs an empty queue", existing)
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

	r := &runner{cfg: cfg, drv: drv, rng: rand.New(rand.NewPCG(cfg.Seed, cfg.Seed^0x9e3779b97f4a7c15)),
		res: &Result{Dialect: drv.Dialect()},
		k: Known{Jobs: map[int64]int64{}, CancelledRuns: map[int64]bool{}, Killed: map[int]bool{},
			Deps: map[int64][]int64{}, Workflows: map[int64]bool{}}}
	// The client enqueues and cancels; it never starts, so it runs nothing.
	r.client, err = lockstep.NewClient(drv, lockstep.Config{})
	if err != nil {
		return nil, fmt.Errorf("chaos: %w", err)
	}
	if err := r.enqueue(ctx); err != nil {
		return nil, err
	}
	runErr := r.run(ctx)
	stopErr := r.stopAll()
	if err := errors.Join(runErr, stopErr); err != nil {
		return r.res, err
	}
	if err := check(ctx, drv, r.k, r.res); err != nil {
		return r.res, err
	}
	return r.res, nil
}

type runner struct {
	cfg    Config
	drv    driver.Driver
	client *lockstep.Client
	rng    *rand.Rand
	res    *Result
	k      Known
	runs   []int64
	procs  []*proc
}

// proc is one worker process.
type proc struct {
	cmd    *exec.Cmd
	done   chan error // the result of Wait
	log    string
	killed bool
}

// startedLine is what a worker process logs once its client has started,
// and so after main installed its SIGINT/SIGTERM handler.
const startedLine = "lockstep: client started"

// terminate sends p SIGTERM once it has logged startedLine (at most a
// minute's wait): a process replaced just before the run ends may still be
// starting, and a SIGTERM before its handler is installed kills it
// instead of stopping it — the harness's race, not the worker's.
func (p *proc) terminate() {
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		if b, err := os.ReadFile(p.log); err == nil && bytes.Contains(b, []byte(startedLine)) {
			break
		}
		time.Sleep(20 * time.Millisecond) // polling the log file for the line
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
}

// enqueue creates the runs and their jobs: every WorkflowEvery-th run a
// workflow with callbacks.
func (r *runner) enqueue(ctx context.Context) error {
	for left := r.cfg.Jobs; left > 0; {
		n := min(left, r.cfg.RunSize)
		jobs := make([]lockstep.InsertManyParams, n)
		for i := range jobs {
			jobs[i] = lockstep.InsertManyParams{
				Args: LedgerArgs{Millis: r.rng.IntN(2*r.cfg.WorkMillis + 1)},
				// Kills cost attempts; the run must never run out.
				Opts: &lockstep.InsertOpts{MaxAttempts: 1000},
			}
		}
		var opts *lockstep.RunOpts
		flow := r.cfg.WorkflowEvery > 0 && (len(r.runs)+1)%r.cfg.WorkflowEvery == 0
		if flow {
			opts = workflowRun(jobs)
		}
		run, res, err := r.client.InsertRun(ctx, fmt.Sprintf("chaos-%d", len(r.runs)+1), opts, jobs...)
		if err != nil {
			return fmt.Errorf("chaos: enqueue: %w", err)
		}
		r.runs = append(r.runs, run.ID)
		ids := map[string]int64{}
		for i, j := range res {
			r.k.Jobs[j.ID] = run.ID
			ids[jobs[i].Key] = j.ID
		}
		if flow {
			r.k.Workflows[run.ID] = true
			r.res.Workflows++
			for i, j := range jobs {
				for _, d := range j.DependsOn {
					r.k.Deps[res[i].ID] = append(r.k.Deps[res[i].ID], ids[d])
				}
			}
		}
		left -= n
	}
	r.res.Runs = len(r.runs)
	return nil
}

func (r *runner) start(slot int) error {
	r.res.Started++
	log := filepath.Join(r.cfg.LogDir, fmt.Sprintf("worker-%d-%d.log", slot, r.res.Started))
	f, err := os.Create(log)
	if err != nil {
		return fmt.Errorf("chaos: %w", err)
	}
	cmd := exec.Command(r.cfg.Binary, "work", "--kind", LedgerKind,
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

// run starts the processes and kills, restarts and cancels until every
// job is final.
func (r *runner) run(ctx context.Context) error {
	r.procs = make([]*proc, r.cfg.Processes)
	began := time.Now()
	for i := range r.procs {
		if err := r.start(i); err != nil {
			return err
		}
	}
	nextKill := time.Now().Add(r.killWait())
	cancelled := 0
	lastProgress := time.Now()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return fmt.Errorf("chaos: jobs still open after %s: %w", time.Since(began).Round(time.Second), ctx.Err())
		case <-tick.C:
		}
		for i, p := range r.procs {
			select {
			case err := <-p.done:
				p.done <- err
				return fmt.Errorf("chaos: worker process %d (pid %d) exited by itself: %v; its log (%s) ends:\n%s", i, p.cmd.Process.Pid, err, p.log, logTail(p.log))
			default:
			}
		}
		open, waiting, err := r.openJobs(ctx)
		if err != nil {
			if k := r.drv.ClassifyError(err); k == rowtype.ErrorConnection || k == rowtype.ErrorUnavailable {
				// The database is away or failing over (a test killing
				// the node under the processes): look again at the next
				// tick, within the run's timeout.
				continue
			}
			return err
		}
		if open == 0 {
			r.res.Wall = time.Since(began)
			return nil
		}
		// Callbacks make the total a little larger than Jobs: close enough
		// for when to cancel.
		done := float64(r.cfg.Jobs-open-waiting) / float64(r.cfg.Jobs)
		if cancelled < r.cfg.CancelRuns && done >= float64(cancelled+1)/float64(r.cfg.CancelRuns+1) {
			ok, err := r.cancelRun(ctx)
			if err != nil {
				return err
			}
			if ok {
				cancelled++
			}
		}
		if time.Now().After(nextKill) {
			if err := r.killOne(); err != nil {
				return err
			}
			nextKill = time.Now().Add(r.killWait())
		}
		if r.cfg.Progress != nil && time.Since(lastProgress) >= time.Second {
			lastProgress = time.Now()
			fmt.Fprintf(r.cfg.Progress, "chaos %s: %s: %d of %d jobs open, %d kills\n",
				r.drv.Dialect(), time.Since(began).Round(time.Second), open, r.cfg.Jobs, r.res.Kills)
		}
	}
}

func (r *runner) killWait() time.Duration {
	return r.cfg.KillMin + time.Duration(r.rng.Int64N(int64(r.cfg.KillMax-r.cfg.KillMin)+1))
}

// killOne sends SIGKILL to a random process, waits for it to die, and
// starts another in its place.
func (r *runner) killOne() error {
	slot := r.rng.IntN(len(r.procs))
	p := r.procs[slot]
	pid := p.cmd.Process.Pid
	// Recorded first: from now on anything the process left undone is the
	// kill's doing.
	r.k.Killed[pid] = true
	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		return fmt.Errorf("chaos: kill pid %d: %w", pid, err)
	}
	<-p.done
	p.killed = true
	r.res.Kills++
	return r.start(slot)
}

// cancelRun cancels the run whose jobs are being worked on now: the run
// of the newest RUNNING job, which has jobs done before it and pending
// after it. It reports whether it cancelled one: when nothing is running
// at this instant it tries again at the next tick.
func (r *runner) cancelRun(ctx context.Context) (bool, error) {
	var runID int64
	err := r.drv.DB().QueryRowContext(ctx, "SELECT run_id FROM lockstep_jobs WHERE status = 'RUNNING' AND run_id IS NOT NULL ORDER BY id DESC LIMIT 1").Scan(&runID)
	if err != nil {
		// Nothing is running at this instant (every process just died).
		return false, nil
	}
	if r.k.CancelledRuns[runID] {
		return false, nil
	}
	_, err = r.client.CancelRun(ctx, runID)
	if errors.Is(err, lockstep.ErrRunFinished) {
		// Its last jobs ended since the read above: nothing to cancel.
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("chaos: cancel run %d: %w", runID, err)
	}
	r.k.CancelledRuns[runID] = true
	r.res.RunsCancelled++
	return true, nil
}

// openJobs counts the PENDING and RUNNING jobs, and the WAITING ones. The
// run ends when none is PENDING or RUNNING: a job still WAITING then lost
// its promotion, which the check reports rather than the timeout.
func (r *runner) openJobs(ctx context.Context) (open, waiting int, err error) {
	err = r.drv.DB().QueryRowContext(ctx, "SELECT"+
		" COALESCE(SUM(CASE WHEN status IN ('PENDING', 'RUNNING') THEN 1 ELSE 0 END), 0),"+
		" COALESCE(SUM(CASE WHEN status = 'WAITING' THEN 1 ELSE 0 END), 0)"+
		" FROM lockstep_jobs WHERE status IN ('PENDING', 'RUNNING', 'WAITING')").Scan(&open, &waiting)
	if err != nil {
		return 0, 0, fmt.Errorf("chaos: count open jobs: %w", err)
	}
	return open, waiting, nil
}

// stopAll stops every live process with SIGTERM and waits for it: each
// must exit 0.
func (r *runner) stopAll() error {
	var errs []error
	for _, p := range r.procs {
		if p == nil || p.killed {
			continue
		}
		p.terminate()
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

// logTail is the end of a worker's log, for a failure message: the log
// file itself may be gone by the time anyone reads it (a CI machine's
// temporary directory).
func logTail(path string) string {
	const keep = 4096
	b, err := os.ReadFile(path)
	if err != nil {
		return "(unreadable: " + err.Error() + ")"
	}
	if len(b) > keep {
		b = b[len(b)-keep:]
	}
	return string(b)
}
