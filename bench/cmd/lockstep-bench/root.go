package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime/pprof"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/lockstep-queue/lockstep/bench/internal/servers"
)

// root is the state shared by all subcommands: the global flags, the output
// streams and the database servers.
type root struct {
	cmd            *cobra.Command
	stdout, stderr io.Writer

	logLevel   string
	json       bool
	cpuProfile string
	profile    *os.File

	logger *slog.Logger

	mu      sync.Mutex
	servers *servers.Set
}

const rootLong = `lockstep-bench measures lockstep against River (on the same PostgreSQL
server) and against the databases' own capacity, on the machine it runs on.
Absolute numbers mean little on a shared machine; compare rows of one run.

MariaDB and PostgreSQL servers are started on first use, throwaway (temp data
directory, a free port on 127.0.0.1, removed on exit) with durable settings:
PostgreSQL fsync, synchronous_commit and full_page_writes on; MariaDB
innodb_flush_log_at_trx_commit=1 with the doublewrite buffer. Set
$` + servers.EnvMySQLDSN + ` and/or $` + servers.EnvPostgresDSN + ` to use
existing servers instead (every run gets its own new database on them).

Results go to stdout (tables, or JSON with --json); progress and server logs
go to stderr.`

// newRoot builds the command tree. A subcommand is a newXxxCmd(r) in its own
// file, added to the list below.
func newRoot(stdout, stderr io.Writer) *root {
	r := &root{stdout: stdout, stderr: stderr}
	cmd := &cobra.Command{
		Use:           "lockstep-bench",
		Short:         "Benchmarks: lockstep vs River, the write floor, claim cost vs depth, latency",
		Long:          rootLong,
		SilenceUsage:  true,
		SilenceErrors: true,
		Args:          cobra.NoArgs,
		RunE:          func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
		PersistentPreRunE: func(*cobra.Command, []string) error {
			return r.setup()
		},
	}
	cmd.SetOut(stdout)
	cmd.SetErr(stderr)
	cmd.CompletionOptions.HiddenDefaultCmd = true

	f := cmd.PersistentFlags()
	f.StringVar(&r.logLevel, "log-level", "info", "log level on stderr: debug, info, warn or error")
	f.BoolVar(&r.json, "json", false, "print results as JSON instead of tables")
	f.StringVar(&r.cpuProfile, "cpuprofile", "", "write a CPU profile of the whole command to this file (go tool pprof)")

	cmd.AddCommand(
		newThroughputCmd(r),
		newSweepCmd(r),
		newFloorCmd(r),
		newDepthCmd(r),
		newLatencyCmd(r),
		newWaitingCmd(r),
		newRetainedCmd(r),
		newLimitsCmd(r),
		newTopologyCmd(r),
	)
	r.cmd = cmd
	return r
}

// setup validates the global flags and builds the logger.
func (r *root) setup() error {
	var level slog.Level
	switch strings.ToLower(r.logLevel) {
	case "debug":
		level = slog.LevelDebug
	case "info":
		level = slog.LevelInfo
	case "warn", "warning":
		level = slog.LevelWarn
	case "error":
		level = slog.LevelError
	default:
		return fmt.Errorf("--log-level must be debug, info, warn or error, got %q", r.logLevel)
	}
	r.logger = slog.New(slog.NewTextHandler(r.stderr, &slog.HandlerOptions{Level: level}))
	if r.cpuProfile != "" {
		f, err := os.Create(r.cpuProfile)
		if err != nil {
			return err
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			f.Close()
			return err
		}
		r.profile = f
	}
	return nil
}

// Logger returns the logger for progress messages (stderr, --log-level).
func (r *root) Logger() *slog.Logger {
	if r.logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return r.logger
}

// Logf logs a progress message at info level.
func (r *root) Logf(format string, args ...any) {
	r.Logger().Info(fmt.Sprintf(format, args...))
}

// JSON reports whether --json was given.
func (r *root) JSON() bool { return r.json }

// writeJSON writes v to stdout as indented JSON, the --json output of every
// subcommand.
func (r *root) writeJSON(v any) error {
	enc := json.NewEncoder(r.stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// Servers returns the shared database servers, creating the Set on first
// use; the servers themselves start when first asked for a database, and
// are stopped when the command ends.
func (r *root) Servers(ctx context.Context) (*servers.Set, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.servers == nil {
		s, err := servers.Start(ctx, r.Logf)
		if err != nil {
			return nil, err
		}
		r.servers = s
	}
	return r.servers, nil
}

// close stops the CPU profile and the servers, if any were started.
func (r *root) close() error {
	if r.profile != nil {
		pprof.StopCPUProfile()
		_ = r.profile.Close()
		r.profile = nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.servers == nil {
		return nil
	}
	begin := time.Now()
	err := r.servers.Close()
	r.Logger().Debug("servers stopped", "took", time.Since(begin).Round(time.Millisecond))
	r.servers = nil
	return err
}
