package lockstep_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log"
	"slices"
	"sync"
	"time"

	"github.com/lockstep-queue/lockstep"
)

// The examples of docs/features.md: a queue's limits, on SQLite. Each
// waits on what it can observe — a worker that started, an event sent
// after a write committed, a job's status — never on time.

type RenderReport struct {
	Report int `json:"report"`
}

func (RenderReport) Kind() string { return "render_report" }

// ExampleQueueLimits_concurrency limits a queue to two RUNNING jobs
// across every process, whatever their workers: here one process with
// eight. The jobs beyond the limit stay PENDING until a slot frees, and a
// slot frees when the job holding it leaves RUNNING.
func ExampleQueueLimits_concurrency() {
	ctx := context.Background()
	drv, cleanup := exampleDriver(ctx)
	defer cleanup()
	started := make(chan struct{}, 6)
	gate := make(chan struct{})
	var mu sync.Mutex
	running, most := 0, 0
	workers := lockstep.NewWorkers()
	lockstep.AddWorker(workers, lockstep.WorkFunc(func(ctx context.Context, job *lockstep.Job[RenderReport]) error {
		mu.Lock()
		running++
		most = max(most, running)
		mu.Unlock()
		started <- struct{}{}
		<-gate // the report takes until the example lets it finish
		mu.Lock()
		running--
		mu.Unlock()
		return nil
	}))
	client, err := lockstep.NewClient(drv, lockstep.Config{
		Workers: workers,
		Queues: map[string]lockstep.QueueConfig{
			// Written as the queue's shared limits when the client starts;
			// SetQueueLimits changes them at runtime.
			"reports": {MaxWorkers: 8, Limits: &lockstep.QueueLimits{Concurrency: 2}},
		},
		PollInterval: 50 * time.Millisecond,
	})
	if err != nil {
		log.Fatal(err)
	}
	jobs := make([]lockstep.InsertManyParams, 6)
	for i := range jobs {
		jobs[i] = lockstep.InsertManyParams{Args: RenderReport{Report: i}, Opts: &lockstep.InsertOpts{Queue: "reports"}}
	}
	if _, err := client.InsertMany(ctx, jobs); err != nil {
		log.Fatal(err)
	}
	if err := client.Start(ctx); err != nil {
		log.Fatal(err)
	}
	defer client.Stop(ctx)
	<-started
	<-started
	// Two are running and stay so until the gate opens: the other four
	// wait, PENDING.
	stats, err := client.QueueStats(ctx, "reports", nil)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("running:", stats.Counts[lockstep.StatusRunning].N, "pending:", stats.Counts[lockstep.StatusPending].N)
	close(gate)
	for range len(jobs) - 2 {
		<-started
	}
	if err := client.Stop(ctx); err != nil { // writes the last DONEs
		log.Fatal(err)
	}
	mu.Lock()
	fmt.Println("most running at once:", most)
	mu.Unlock()
	stats, err = client.QueueStats(ctx, "reports", nil)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("done:", stats.Counts[lockstep.StatusDone].N)
	// Output:
	// running: 2 pending: 4
	// most running at once: 2
	// done: 6
}

type SyncCustomer struct {
	Customer string `json:"customer"`
	Part     int    `json:"part"`
}

func (SyncCustomer) Kind() string { return "sync_customer" }

// InsertOpts gives every sync its customer as its limit key: the kind
// derives the key from its args, so no enqueue can forget it.
func (a SyncCustomer) InsertOpts() lockstep.InsertOpts {
	return lockstep.InsertOpts{Queue: "crm", LimitKey: a.Customer}
}

// ExampleQueueLimits_keyConcurrency runs at most one sync per customer at
// a time, across every process, while different customers' syncs run side
// by side. A job a claim finds over its key's limit becomes BLOCKED — out
// of the claim's way, and visible as such — and PENDING again when its
// key has room.
func ExampleQueueLimits_keyConcurrency() {
	ctx := context.Background()
	drv, cleanup := exampleDriver(ctx)
	defer cleanup()
	started := make(chan string, 3)
	gate := make(chan struct{})
	workers := lockstep.NewWorkers()
	lockstep.AddWorker(workers, lockstep.WorkFunc(func(ctx context.Context, job *lockstep.Job[SyncCustomer]) error {
		started <- fmt.Sprintf("%s#%d", job.Args.Customer, job.Args.Part)
		<-gate
		return nil
	}))
	client, err := lockstep.NewClient(drv, lockstep.Config{
		Workers:      workers,
		Queues:       map[string]lockstep.QueueConfig{"crm": {MaxWorkers: 4}},
		PollInterval: 50 * time.Millisecond,
	})
	if err != nil {
		log.Fatal(err)
	}
	if err := client.SetQueueLimits(ctx, "crm", lockstep.QueueLimits{KeyConcurrency: 1}); err != nil {
		log.Fatal(err)
	}
	res, err := client.InsertMany(ctx, []lockstep.InsertManyParams{
		{Args: SyncCustomer{Customer: "acme", Part: 1}},
		{Args: SyncCustomer{Customer: "acme", Part: 2}},
		{Args: SyncCustomer{Customer: "globex", Part: 1}},
	})
	if err != nil {
		log.Fatal(err)
	}
	if err := client.Start(ctx); err != nil {
		log.Fatal(err)
	}
	defer client.Stop(ctx)
	first := []string{<-started, <-started}
	if first[0] > first[1] {
		first[0], first[1] = first[1], first[0]
	}
	fmt.Println("running:", first)
	// The claim that started acme#1 found acme#2 over acme's limit.
	for _, r := range res {
		job, err := client.Job(ctx, r.ID)
		if err != nil {
			log.Fatal(err)
		}
		var a SyncCustomer
		if err := json.Unmarshal(job.Args, &a); err != nil {
			log.Fatal(err)
		}
		fmt.Printf("%s#%d: %s\n", a.Customer, a.Part, job.Status)
	}
	close(gate) // acme#1 ends, and its end releases acme#2
	fmt.Println("then:", <-started)
	// Output:
	// running: [acme#1 globex#1]
	// acme#1: RUNNING
	// acme#2: BLOCKED
	// globex#1: RUNNING
	// then: acme#2
}

type PostEntry struct {
	Account string `json:"account"`
	Entry   int    `json:"entry"`
}

func (PostEntry) Kind() string { return "post_entry" }

func (a PostEntry) InsertOpts() lockstep.InsertOpts {
	return lockstep.InsertOpts{Queue: "ledger", LimitKey: a.Account}
}

// exampleLedger runs three entries of one account through a queue whose
// keys are sequences under policy; the first entry fails on its first
// attempt. It prints the statuses once the first has FAILED, retries it
// if the sequence is held, and prints the order the entries ran in.
func exampleLedger(policy lockstep.SequencePolicy) {
	ctx := context.Background()
	drv, cleanup := exampleDriver(ctx)
	defer cleanup()
	ran := make(chan int, 4)
	failed := make(chan struct{}, 1)
	attempts := map[int]int{}
	var mu sync.Mutex
	workers := lockstep.NewWorkers()
	lockstep.AddWorker(workers, lockstep.WorkFunc(func(ctx context.Context, job *lockstep.Job[PostEntry]) error {
		mu.Lock()
		attempts[job.Args.Entry]++
		first := attempts[job.Args.Entry] == 1
		mu.Unlock()
		ran <- job.Args.Entry
		if job.Args.Entry == 1 && first {
			return lockstep.Permanent(errors.New("the bank's API said no"))
		}
		return nil
	}))
	client, err := lockstep.NewClient(drv, lockstep.Config{
		Workers:      workers,
		Queues:       map[string]lockstep.QueueConfig{"ledger": {MaxWorkers: 4}},
		PollInterval: 50 * time.Millisecond,
		// Sent after the FAILED is committed.
		OnEvent: func(e lockstep.Event) {
			if e.Kind == lockstep.EventJobFinished && e.Status == lockstep.StatusFailed {
				failed <- struct{}{}
			}
		},
	})
	if err != nil {
		log.Fatal(err)
	}
	if err := client.SetQueueLimits(ctx, "ledger", lockstep.QueueLimits{Sequence: policy}); err != nil {
		log.Fatal(err)
	}
	res, err := client.InsertMany(ctx, []lockstep.InsertManyParams{
		{Args: PostEntry{Account: "acct-7", Entry: 1}},
		{Args: PostEntry{Account: "acct-7", Entry: 2}},
		{Args: PostEntry{Account: "acct-7", Entry: 3}},
	})
	if err != nil {
		log.Fatal(err)
	}
	if err := client.Start(ctx); err != nil {
		log.Fatal(err)
	}
	defer client.Stop(ctx)
	var order []int
	order = append(order, <-ran)
	<-failed
	if policy == lockstep.SequenceHold {
		// Held: entries 2 and 3 stay BLOCKED behind the FAILED entry,
		// which is still the sequence's first; nothing else runs.
		var statuses []lockstep.JobStatus
		for _, r := range res {
			job, err := client.Job(ctx, r.ID)
			if err != nil {
				log.Fatal(err)
			}
			statuses = append(statuses, job.Status)
		}
		fmt.Println(statuses)
		// Fixed, the entry is retried: it runs first, then the others.
		if _, err := client.RetryJob(ctx, res[0].ID); err != nil {
			log.Fatal(err)
		}
		order = append(order, <-ran)
	}
	order = append(order, <-ran, <-ran)
	fmt.Println("ran:", order)
}

// ExampleQueueLimits_sequence makes each account's entries a sequence:
// one at a time, in insert order, across every process. With SequenceHold
// a FAILED entry holds the rest of its account's entries until it is
// retried (or the queue is set to SequenceRelease).
func ExampleQueueLimits_sequence() {
	exampleLedger(lockstep.SequenceHold)
	// Output:
	// [FAILED BLOCKED BLOCKED]
	// ran: [1 1 2 3]
}

// ExampleQueueLimits_sequenceRelease: with SequenceRelease a FAILED entry
// lets the next one of its sequence run.
func ExampleQueueLimits_sequenceRelease() {
	exampleLedger(lockstep.SequenceRelease)
	// Output:
	// ran: [1 2 3]
}

type NotifyPartner struct {
	Event int `json:"event"`
}

func (NotifyPartner) Kind() string { return "notify_partner" }

// ExampleQueueLimits_rate starts at most two jobs per 200 ms across every
// process, in any window of that length. A claim that finds the window
// full takes nothing and its process claims again when the oldest start
// leaves the window — it does not poll meanwhile. The starts are the
// database's clock (the jobs' StartedAt).
func ExampleQueueLimits_rate() {
	ctx := context.Background()
	drv, cleanup := exampleDriver(ctx)
	defer cleanup()
	const period = 200 * time.Millisecond
	done := make(chan struct{}, 5)
	workers := lockstep.NewWorkers()
	lockstep.AddWorker(workers, lockstep.WorkFunc(func(ctx context.Context, job *lockstep.Job[NotifyPartner]) error {
		done <- struct{}{}
		return nil
	}))
	client, err := lockstep.NewClient(drv, lockstep.Config{
		Workers:      workers,
		Queues:       map[string]lockstep.QueueConfig{"partner": {MaxWorkers: 8}},
		PollInterval: 50 * time.Millisecond,
	})
	if err != nil {
		log.Fatal(err)
	}
	if err := client.SetQueueLimits(ctx, "partner", lockstep.QueueLimits{Rate: 2, RatePeriod: period}); err != nil {
		log.Fatal(err)
	}
	jobs := make([]lockstep.InsertManyParams, 5)
	for i := range jobs {
		jobs[i] = lockstep.InsertManyParams{Args: NotifyPartner{Event: i}, Opts: &lockstep.InsertOpts{Queue: "partner"}}
	}
	res, err := client.InsertMany(ctx, jobs)
	if err != nil {
		log.Fatal(err)
	}
	if err := client.Start(ctx); err != nil {
		log.Fatal(err)
	}
	defer client.Stop(ctx)
	for range jobs {
		<-done
	}
	if err := client.Stop(ctx); err != nil {
		log.Fatal(err)
	}
	var starts []time.Time
	for _, r := range res {
		job, err := client.Job(ctx, r.ID)
		if err != nil {
			log.Fatal(err)
		}
		starts = append(starts, job.StartedAt)
	}
	// Every start is at least a period after the start two before it:
	// never three in one window.
	slices.SortFunc(starts, func(a, b time.Time) int { return a.Compare(b) })
	spaced := true
	for i := 2; i < len(starts); i++ {
		spaced = spaced && starts[i].Sub(starts[i-2]) >= period
	}
	fmt.Println("all started:", len(starts), "no three within", period, spaced)
	// Output:
	// all started: 5 no three within 200ms true
}
