package lockstep

import (
	"context"
	"math"
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
		"too many attempts": {MaxAttempts: math.MaxInt32 + 1},
		"negative args":     {MaxArgsBytes: -1},
		"control in queue":  {Queues: map[string]QueueConfig{"a\u0085b": {MaxWorkers: 1}}},
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
	// Every control character is refused: C0, DEL and C1 (which some
	// terminals obey as escape sequences).
	for _, r := range []rune{0, '\n', '\r', 0x1b, 0x7f, 0x80, 0x85, 0x9b, 0x9f} {
		require.ErrorContains(t, validName("queue", "a"+string(r)+"b"), "contains a control or invalid character", "%U", r)
	}
	// Printable text, quotes and SQL metacharacters included, is a name.
	for _, ok := range []string{"a b", "ü", "\u00a0", "'; DROP TABLE x; --", "%_\\`\"", strings.Repeat("é", 64)} {
		require.NoError(t, validName("queue", ok), "%q", ok)
	}
	require.EqualError(t, validName("kind", strings.Repeat("é", 65)), "kind name is 130 bytes long; the limit is 128")
}

func TestAddWorkerRejectsDuplicates(t *testing.T) {
	ws := NewWorkers()
	require.NoError(t, AddWorkerSafely(ws, WorkFunc(func(context.Context, *Job[exampleArgs]) error { return nil })))
	require.ErrorContains(t, AddWorkerSafely(ws, WorkFunc(func(context.Context, *Job[exampleArgs]) error { return nil })), "already registered")
}

type exampleArgs struct{}

func (exampleArgs) Kind() string { return "example" }
