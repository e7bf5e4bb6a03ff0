package lockorder_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lockstep-queue/lockstep/lockdiag/locktest"
	"github.com/lockstep-queue/lockstep/lockdiag/lockview"
	"github.com/lockstep-queue/lockstep/rowtype"
)

// TestWorkflowNegativeControl: the harness that passes every workflow pair
// must see a deadlock when a promotion breaks the order — here one that
// skips the run row and counts its dependent down before writing the job
// that ended (a dependent's id is above its dependency's, so this locks
// downwards). Against the run's cancel (the run row, then its jobs by
// primary key upwards) that is a cycle: A holds the dependent and waits for
// the job the cancel holds; the cancel holds the job and waits for the
// dependent. Its fixed twin is lockstep's own end of a job with
// dependents, which the same harness runs against the same cancel among
// the writer pairs, without a deadlock. On every server: InnoDB's 1213 and
// PostgreSQL's 40P01 are both ErrorDeadlock.
func TestWorkflowNegativeControl(t *testing.T) {
	for _, s := range servers(t) {
		t.Run(s.name, func(t *testing.T) {
			t.Parallel()
			loadAlmostDone(t, s)
			pk := ""
			if s.flavor != lockview.Postgres {
				pk = "FORCE INDEX (PRIMARY) "
			}
			// Session A: the unsafe promotion, in the queue's own kind of
			// transaction (READ COMMITTED).
			a := func(ctx context.Context, pause func()) error {
				tx, err := s.drv.BeginSQL(ctx)
				if err != nil {
					return err
				}
				defer func() { _ = tx.Rollback() }()
				if _, err := tx.ExecContext(ctx, fmt.Sprintf("UPDATE lockstep_jobs %sSET waiting_on = waiting_on - 1 WHERE id = %d AND status = 'WAITING'", pk, flowJoin)); err != nil {
					return err
				}
				pause()
				if _, err := tx.ExecContext(ctx, fmt.Sprintf("UPDATE lockstep_jobs %sSET status = 'DONE' WHERE id = %d AND status = 'RUNNING'", pk, flowRunA)); err != nil {
					return err
				}
				return tx.Commit()
			}
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			out, err := locktest.Interleave(ctx, s.observer.DB(), s.flavor, a, func(ctx context.Context) error {
				return cancelRunOfFlow.run(ctx, s.drv.Executor())
			})
			require.NoError(t, err)
			require.True(t, out.BWaited, "the run's cancel must be seen waiting for the dependent A holds")
			for _, w := range out.Waits {
				t.Logf("seen: %s", w)
			}
			kinds := []rowtype.ErrorKind{s.drv.ClassifyError(out.ErrA), s.drv.ClassifyError(out.ErrB)}
			require.Contains(t, kinds, rowtype.ErrorDeadlock, "expected a deadlock; A: %v, B: %v", out.ErrA, out.ErrB)
			t.Logf("deadlock as expected: A: %v; B: %v", out.ErrA, out.ErrB)
		})
	}
}
