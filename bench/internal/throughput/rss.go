package throughput

import (
	"bufio"
	"context"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
)

// sampleRSS samples this process's resident set every 100ms until ctx ends
// or the returned function is called, which returns the peak in MiB.
func sampleRSS(ctx context.Context) func() float64 {
	var peak atomic.Int64
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	sample := func() {
		if kb := rssKiB(); kb > peak.Load() {
			peak.Store(kb)
		}
	}
	go func() {
		defer close(done)
		t := time.NewTicker(100 * time.Millisecond)
		defer t.Stop()
		for {
			sample()
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	}()
	return func() float64 {
		cancel()
		<-done
		sample()
		return float64(peak.Load()) / 1024
	}
}

// rssKiB reads VmRSS from /proc/self/status (0 where there is none).
func rssKiB() int64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return kb
		}
	}
	return 0
}

// memoryGiB reads MemTotal from /proc/meminfo (0 where there is none).
func memoryGiB() float64 {
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "MemTotal:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return float64(kb) / (1 << 20)
		}
	}
	return 0
}
