package limits

import (
	"context"
	"database/sql"
	"time"

	"github.com/lockstep-queue/lockstep/bench/internal/throughput"
)

// sampleSQL counts the RUNNING jobs per queue and key in one statement:
// one snapshot, so a count above a limit is a limit that failed, not two
// reads that straddled a change. Through the (queue, status, heartbeat_at)
// index; the marker keeps it out of the statements per job.
const sampleSQL = "SELECT /* " + throughput.SampleMarker + " */ queue, limit_key, COUNT(*) FROM lockstep_jobs" +
	" WHERE queue IN ('" + benchQueue + "', '" + serialQueue + "') AND status = 'RUNNING' GROUP BY queue, limit_key"

// samples are the peaks a sampler saw.
type samples struct {
	n       int
	peak    map[string]int // per queue
	peakKey int            // one key of the measured queue
	err     error
}

type sampler struct {
	cancel context.CancelFunc
	done   chan samples
}

// startSampler counts RUNNING jobs every interval until stop.
func startSampler(ctx context.Context, db *sql.DB, every time.Duration) *sampler {
	ctx, cancel := context.WithCancel(ctx)
	s := &sampler{cancel: cancel, done: make(chan samples, 1)}
	go func() {
		out := samples{peak: map[string]int{}}
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				s.done <- out
				return
			case <-t.C:
			}
			if err := sampleOnce(ctx, db, &out); err != nil && ctx.Err() == nil {
				out.err = err
			}
		}
	}()
	return s
}

func sampleOnce(ctx context.Context, db *sql.DB, out *samples) error {
	rows, err := db.QueryContext(ctx, sampleSQL)
	if err != nil {
		return err
	}
	defer rows.Close()
	total := map[string]int{}
	for rows.Next() {
		var queue string
		var key sql.NullString
		var n int
		if err := rows.Scan(&queue, &key, &n); err != nil {
			return err
		}
		total[queue] += n
		if queue == benchQueue && key.Valid && key.String != "" {
			out.peakKey = max(out.peakKey, n)
		}
	}
	if err := rows.Err(); err != nil {
		return err
	}
	out.n++
	for q, n := range total {
		out.peak[q] = max(out.peak[q], n)
	}
	return nil
}

// stop ends the sampling and returns what it saw.
func (s *sampler) stop() samples {
	s.cancel()
	return <-s.done
}
