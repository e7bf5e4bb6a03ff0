package lockstep_test

// Job kinds the suite's workers run.

type noopArgs struct{ N int }

func (noopArgs) Kind() string { return "noop" }

type ledgerArgs struct{ N int }

func (ledgerArgs) Kind() string { return "ledger" }

type flakyArgs struct{ FailTimes int }

func (flakyArgs) Kind() string { return "flaky" }

type alwaysFailArgs struct{}

func (alwaysFailArgs) Kind() string { return "always_fail" }

type snoozeArgs struct{}

func (snoozeArgs) Kind() string { return "snooze" }

type timeoutArgs struct{}

func (timeoutArgs) Kind() string { return "timeout" }

type panicArgs struct{}

func (panicArgs) Kind() string { return "panic" }

type blockArgs struct{ Tag string }

func (blockArgs) Kind() string { return "block" }

type unknownArgs struct{}

func (unknownArgs) Kind() string { return "nobody_runs_this" }
