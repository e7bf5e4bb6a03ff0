package lockstep

import (
	"testing"

	"github.com/lockstep-queue/lockstep/driver"
	"time"
)

// WaitProducerTurn wakes the queue's producer twice and returns once it
// has taken both wake-ups: the loop turn that took the first one has
// then decided whether to claim, after everything that happened before
// the call. It is how a test sees that a paused or full queue declined to
// claim, without sleeping.
func (c *Client) WaitProducerTurn(t testing.TB, queue string) {
	t.Helper()
	c.mu.Lock()
	ch := c.wake[queue]
	c.mu.Unlock()
	if ch == nil {
		t.Fatalf("no producer for queue %q", queue)
	}
	for range 2 {
		ch <- struct{}{} // waits while an earlier wake-up is pending
		deadline := time.Now().Add(10 * time.Second)
		for len(ch) > 0 {
			if time.Now().After(deadline) {
				t.Fatalf("the producer of %q did not take its wake-up", queue)
			}
			time.Sleep(time.Millisecond)
		}
	}
}

// NextTick is the tick of a periodic job after t, as its schedule gives it.
func NextTick(p PeriodicJob, t time.Time) (time.Time, error) {
	s, err := p.parseSchedule()
	if err != nil {
		return time.Time{}, err
	}
	return s.Next(t), nil
}

// SetClaimTrace makes the client's producers report their statements to
// tr; set before Start.
func (c *Client) SetClaimTrace(tr *driver.StatementTrace) { c.claimTrace = tr }
