package dashboard

import (
	"fmt"
	"sync"
	"time"
)

// sample is the finished-jobs rate at one moment: DONE+FAILED per second
// over the window (a moving average), summed over the queues.
type sample struct {
	At     time.Time
	Rate   float64
	Capped bool
}

// throughput is a ring of samples, oldest first.
type throughput struct {
	mu      sync.Mutex
	samples []sample
	size    int
}

func newThroughput(size int) *throughput {
	return &throughput{size: size}
}

// add records s unless the last sample is younger than minGap (a page
// load right after the sampler's tick adds nothing).
func (t *throughput) add(s sample, minGap time.Duration) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if n := len(t.samples); n > 0 && s.At.Sub(t.samples[n-1].At) < minGap {
		return
	}
	t.samples = append(t.samples, s)
	if len(t.samples) > t.size {
		t.samples = append(t.samples[:0], t.samples[len(t.samples)-t.size:]...)
	}
}

func (t *throughput) snapshot() []sample {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]sample(nil), t.samples...)
}

// chart is the samples as the bars of an inline SVG, newest at the right.
type chart struct {
	Width, Height float64
	Bars          []bar
	Max, Latest   string
	From, To      time.Time
	Count         int
}

type bar struct {
	X, Y, W, H float64
	Title      string
}

func (t *throughput) chart(slots int) chart {
	ss := t.snapshot()
	c := chart{Width: 600, Height: 100, Count: len(ss)}
	if len(ss) == 0 {
		return c
	}
	peak := 0.0
	for _, s := range ss {
		peak = max(peak, s.Rate)
	}
	scale := peak
	if scale <= 0 {
		scale = 1
	}
	w := c.Width / float64(max(slots, len(ss)))
	x0 := c.Width - w*float64(len(ss))
	for i, s := range ss {
		h := (c.Height - 2) * s.Rate / scale
		if s.Rate > 0 && h < 1 {
			h = 1
		}
		ge := ""
		if s.Capped {
			ge = "≥"
		}
		c.Bars = append(c.Bars, bar{
			X: x0 + float64(i)*w, Y: c.Height - h, W: max(w-1, 0.5), H: h,
			Title: fmt.Sprintf("%s: %s%s jobs/s", s.At.UTC().Format("15:04:05"), ge, fmtRate(s.Rate)),
		})
	}
	c.Max = fmtRate(peak)
	last := ss[len(ss)-1]
	c.Latest = fmtRate(last.Rate)
	if last.Capped {
		c.Latest = "≥" + c.Latest
	}
	c.From, c.To = ss[0].At, last.At
	return c
}
