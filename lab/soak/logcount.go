package soak

import (
	"context"
	"fmt"
	"log/slog"
	"sort"
	"sync"
)

// logCounter passes records on to the caller's handler and counts the
// clients' error records (a failed claim, finish, heartbeat or reap) by
// message: in a soak each of them is a finding, whether or not anyone
// reads the logs.
type logCounter struct {
	inner  slog.Handler
	counts *errorCounts
}

type errorCounts struct {
	mu    sync.Mutex
	byMsg map[string]int
	first map[string]string // message → the first record's attributes
}

func newLogCounter(inner slog.Handler) *logCounter {
	return &logCounter{inner: inner, counts: &errorCounts{byMsg: map[string]int{}, first: map[string]string{}}}
}

func (h *logCounter) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= slog.LevelError || h.inner.Enabled(ctx, l)
}

func (h *logCounter) Handle(ctx context.Context, r slog.Record) error {
	if r.Level >= slog.LevelError {
		attrs := ""
		r.Attrs(func(a slog.Attr) bool {
			attrs += " " + a.String()
			return true
		})
		h.counts.mu.Lock()
		if h.counts.byMsg[r.Message] == 0 {
			h.counts.first[r.Message] = attrs
		}
		h.counts.byMsg[r.Message]++
		h.counts.mu.Unlock()
	}
	if h.inner.Enabled(ctx, r.Level) {
		return h.inner.Handle(ctx, r)
	}
	return nil
}

func (h *logCounter) WithAttrs(attrs []slog.Attr) slog.Handler {
	return &logCounter{inner: h.inner.WithAttrs(attrs), counts: h.counts}
}

func (h *logCounter) WithGroup(name string) slog.Handler {
	return &logCounter{inner: h.inner.WithGroup(name), counts: h.counts}
}

// errors describes the counted error records, most frequent first.
func (h *logCounter) errors() []string {
	h.counts.mu.Lock()
	defer h.counts.mu.Unlock()
	msgs := make([]string, 0, len(h.counts.byMsg))
	for m := range h.counts.byMsg {
		msgs = append(msgs, m)
	}
	sort.Slice(msgs, func(i, j int) bool { return h.counts.byMsg[msgs[i]] > h.counts.byMsg[msgs[j]] })
	out := make([]string, len(msgs))
	for i, m := range msgs {
		out[i] = fmt.Sprintf("clients logged %q %d times; first:%s", m, h.counts.byMsg[m], h.counts.first[m])
	}
	return out
}
