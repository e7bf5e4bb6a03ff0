package cli

import (
	"time"

	"github.com/spf13/pflag"

	"github.com/lockstep-queue/lockstep"
)

// retentionOptions are the retention flags `work` and `serve` share.
type retentionOptions struct {
	done, cancelled, failed time.Duration
	off                     bool
}

func addRetentionFlags(f *pflag.FlagSet, o *retentionOptions) {
	f.DurationVar(&o.done, "retain-done", 24*time.Hour, "delete DONE jobs this long after they finished (negative: keep them)")
	f.DurationVar(&o.cancelled, "retain-cancelled", 24*time.Hour, "delete CANCELLED jobs this long after they were cancelled (negative: keep them)")
	f.DurationVar(&o.failed, "retain-failed", 7*24*time.Hour, "delete FAILED jobs this long after they failed (negative: keep them)")
	f.BoolVar(&o.off, "no-retention", false, "delete no jobs from this process (another may; retention is safe in every process)")
}

// apply sets the client's retention; a zero duration is taken as "at
// once" rather than the library's "default", which the flag already is.
func (o retentionOptions) apply(cfg *lockstep.Config) {
	at := func(d time.Duration) time.Duration {
		if d == 0 {
			return time.Nanosecond
		}
		return d
	}
	cfg.RetainDone, cfg.RetainCancelled, cfg.RetainFailed = at(o.done), at(o.cancelled), at(o.failed)
	cfg.DisableRetention = o.off
}
