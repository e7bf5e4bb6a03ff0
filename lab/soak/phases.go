package soak

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/lockstep-queue/lockstep/rowtype"
)

// load runs the actors for the configured duration.
func (s *soak) load(ctx context.Context) error {
	stop := make(chan struct{})
	a := &actors{s: s, stop: stop}
	var wg sync.WaitGroup
	for i := range enqueuers {
		wg.Go(func() { a.enqueuer(ctx, rand.New(rand.NewPCG(s.cfg.Seed, uint64(streamEnqueuer*100+i))), i) })
	}
	wg.Go(func() { a.canceller(ctx, rand.New(rand.NewPCG(s.cfg.Seed, streamCanceller))) })
	wg.Go(func() { a.deadWorker(ctx, rand.New(rand.NewPCG(s.cfg.Seed, streamDead)), s.dead) })
	wg.Go(func() { a.flowCreator(ctx, rand.New(rand.NewPCG(s.cfg.Seed, streamFlow))) })
	wg.Go(func() { a.flowRetrier(ctx, rand.New(rand.NewPCG(s.cfg.Seed, streamFlowRetry))) })
	wg.Go(func() { a.flowCanceller(ctx, rand.New(rand.NewPCG(s.cfg.Seed, streamFlowCancel))) })
	wg.Go(func() { a.settings(ctx, rand.New(rand.NewPCG(s.cfg.Seed, streamSettings))) })

	end := time.NewTimer(s.cfg.Duration)
	defer end.Stop()
	sample := time.NewTicker(250 * time.Millisecond)
	defer sample.Stop()
	lastReport := time.Now()
	var err error
loop:
	for {
		select {
		case <-ctx.Done():
			err = fmt.Errorf("soak: interrupted during the load: %w", ctx.Err())
			break loop
		case <-end.C:
			break loop
		case <-sample.C:
			counts, cerr := statusCounts(ctx, s.own)
			if cerr != nil {
				s.ledger.problem("sample job counts: %v", cerr)
				continue
			}
			s.backlog.Store(int64(counts[rowtype.StatusPending]))
			if time.Since(lastReport) >= s.cfg.ProgressInterval {
				lastReport = time.Now()
				s.progress("load   %s", s.describe(counts))
			}
		}
	}
	close(stop)
	wg.Wait()
	return err
}

func (s *soak) describe(c map[rowtype.JobStatus]int) string {
	s.limitStats.mu.Lock()
	samples := s.limitStats.samples
	s.limitStats.mu.Unlock()
	return fmt.Sprintf("waiting %d  pending %d  blocked %d  running %d  done %d  failed %d  cancelled %d  executions %d  limit samples %d",
		c[rowtype.StatusWaiting], c[rowtype.StatusPending], c[rowtype.StatusBlocked], c[rowtype.StatusRunning], c[rowtype.StatusDone], c[rowtype.StatusFailed],
		c[rowtype.StatusCancelled], s.ledger.executions(), samples)
}

// drain waits until no job is PENDING, BLOCKED or RUNNING; false if
// DrainTimeout passed first, which is itself a failed check (a BLOCKED job
// that nothing releases is capacity leaked).
func (s *soak) drain(ctx context.Context) (bool, error) {
	deadline := time.Now().Add(s.cfg.DrainTimeout)
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	lastReport := time.Time{}
	for {
		counts, err := statusCounts(ctx, s.own)
		if err != nil {
			return false, err
		}
		open := counts[rowtype.StatusPending] + counts[rowtype.StatusRunning] + counts[rowtype.StatusBlocked]
		if time.Since(lastReport) >= s.cfg.ProgressInterval || open == 0 {
			lastReport = time.Now()
			s.progress("drain  %s", s.describe(counts))
		}
		if open == 0 {
			return true, nil
		}
		if time.Now().After(deadline) {
			s.ledger.problem("drain timed out after %s with %d jobs PENDING, %d BLOCKED and %d RUNNING",
				s.cfg.DrainTimeout, counts[rowtype.StatusPending], counts[rowtype.StatusBlocked], counts[rowtype.StatusRunning])
			return false, nil
		}
		select {
		case <-ctx.Done():
			return false, fmt.Errorf("soak: interrupted during the drain: %w", ctx.Err())
		case <-tick.C:
		}
	}
}

// stopPools stops every worker client and closes its pool. After a drain
// there is nothing running; after a failed one, running jobs are cancelled.
func (s *soak) stopPools(cancelRunning bool) {
	ctx, cancel := context.WithTimeout(context.Background(), stopTimeout)
	defer cancel()
	var wg sync.WaitGroup
	for i, p := range s.pools {
		if p.stopped {
			continue
		}
		p.stopped = true
		wg.Go(func() {
			stop := p.client.Stop
			if cancelRunning {
				stop = p.client.StopAndCancel
			}
			if err := stop(ctx); err != nil {
				s.ledger.problem("stop pool %d: %v", i, err)
			}
		})
	}
	wg.Wait()
	for _, p := range s.pools {
		_ = p.drv.Close()
	}
	s.pools = nil
}

// teardown releases what run left behind when it returned early.
func (s *soak) teardown() {
	s.stopPools(true)
	if s.own == nil {
		return
	}
	if s.auditInstalled {
		ctx, cancel := context.WithTimeout(context.Background(), stopTimeout)
		_ = dropAudit(ctx, s.own)
		cancel()
	}
	_ = s.own.Close()
	s.own = nil
}
