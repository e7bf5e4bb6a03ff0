// Package clienv is what every lockstep command shares, whichever package
// builds it: the global flags' values, the output streams and the logger,
// opening the database --dsn names, the JSON and table output, and the
// Extension through which the lock-order lab (lab/labcli) adds its commands
// to the binary. It is small and imports no command, so that the lab can
// use it without importing the queue CLI (internal/cli), and the queue CLI
// can be built without any lab package.
package clienv

import (
	"fmt"
	"io"
	"log/slog"
	"strings"
)

// Env is the state shared by all commands: the global flags and the
// output streams. The root command fills it in before any command runs.
type Env struct {
	Stdout, Stderr io.Writer

	DSN       string
	LogLevel  string
	LogFormat string

	// DSNSource is where DSN came from; Database is how the command that
	// runs uses it (its DatabaseAnnotation). The root command sets both
	// before the command runs; OpenDriver goes by them.
	DSNSource DSNSource
	Database  string

	Logger *slog.Logger
}

// Setup validates the global flags and builds the logger. Logs go to
// stderr; command output goes to stdout.
func (e *Env) Setup() error {
	level, err := parseLevel(e.LogLevel)
	if err != nil {
		return err
	}
	switch strings.ToLower(e.LogFormat) {
	case "text", "json":
	default:
		return fmt.Errorf("--log-format must be text or json, got %q", e.LogFormat)
	}
	e.Logger = e.NewLogger(level)
	return nil
}

// NewLogger returns a logger in the --log-format at the given level.
func (e *Env) NewLogger(level slog.Level) *slog.Logger {
	opts := &slog.HandlerOptions{Level: level}
	if strings.EqualFold(e.LogFormat, "json") {
		return slog.New(slog.NewJSONHandler(e.Stderr, opts))
	}
	return slog.New(slog.NewTextHandler(e.Stderr, opts))
}

func parseLevel(s string) (slog.Level, error) {
	switch strings.ToLower(s) {
	case "debug":
		return slog.LevelDebug, nil
	case "info":
		return slog.LevelInfo, nil
	case "warn", "warning":
		return slog.LevelWarn, nil
	case "error":
		return slog.LevelError, nil
	}
	return 0, fmt.Errorf("--log-level must be debug, info, warn or error, got %q", s)
}
