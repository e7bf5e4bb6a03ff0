package lockstep

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestDefaultRetryBackoffGrowsWithJitter(t *testing.T) {
	for attempt, base := range map[int]time.Duration{1: time.Second, 2: 16 * time.Second, 3: 81 * time.Second, 10: 10000 * time.Second} {
		for i := 0; i < 50; i++ {
			d := DefaultRetryBackoff(attempt)
			require.GreaterOrEqual(t, d, time.Duration(float64(base)*0.9), "attempt %d", attempt)
			require.LessOrEqual(t, d, time.Duration(float64(base)*1.1), "attempt %d", attempt)
		}
	}
	require.LessOrEqual(t, DefaultRetryBackoff(1000), time.Duration(float64(24*time.Hour)*1.1), "capped")
}

func TestConfigDefaultsAndValidation(t *testing.T) {
	c, err := Config{Workers: NewWorkers()}.withDefaults()
	require.NoError(t, err)
	require.Equal(t, map[string]QueueConfig{DefaultQueue: {MaxWorkers: 10}}, c.Queues)
	require.Equal(t, 25, c.MaxAttempts)
	require.Equal(t, time.Minute, c.ReapAfter)
	require.Equal(t, 15*time.Second, c.ReapInterval)
	require.Equal(t, 1<<20, c.MaxArgsBytes)

	bad := map[string]Config{
		"reap too soon":     {HeartbeatInterval: time.Minute, ReapAfter: time.Minute},
		"negative poll":     {PollInterval: -1},
		"zero workers":      {Queues: map[string]QueueConfig{"q": {MaxWorkers: 0}}},
		"bad queue name":    {Queues: map[string]QueueConfig{"": {MaxWorkers: 1}}},
		"negative attempts": {MaxAttempts: -1},
	}
	for name, cfg := range bad {
		_, err := cfg.withDefaults()
		require.Error(t, err, name)
	}
}

func TestValidName(t *testing.T) {
	require.NoError(t, validName("kind", "send_email"))
	require.NoError(t, validName("queue", "émails-été"))
	require.Error(t, validName("kind", ""))
	require.Error(t, validName("kind", strings.Repeat("x", 129)))
	require.Error(t, validName("kind", "a\x00b"))
	require.Error(t, validName("kind", "a\tb"))
	require.Error(t, validName("kind", string([]byte{0xff})))
}

func TestAddWorkerRejectsDuplicates(t *testing.T) {
	ws := NewWorkers()
	require.NoError(t, AddWorkerSafely(ws, WorkFunc(func(context.Context, *Job[exampleArgs]) error { return nil })))
	require.ErrorContains(t, AddWorkerSafely(ws, WorkFunc(func(context.Context, *Job[exampleArgs]) error { return nil })), "already registered")
}

type exampleArgs struct{}

func (exampleArgs) Kind() string { return "example" }
