package throughput

import (
	"context"
	"database/sql"
	"fmt"
	"regexp"
	"sort"
	"strings"
)

// DBStats is what the database did for one run's work phase, per job.
type DBStats struct {
	// StatementsPerJob counts every statement the system sent
	// (PostgreSQL: pg_stat_statements calls; MariaDB: Questions).
	StatementsPerJob float64 `json:"statements_per_job"`
	// Top lists the most frequent statements (PostgreSQL) or statement
	// types (MariaDB), per job.
	Top []StatementStat `json:"top"`
	// WALBytesPerJob is PostgreSQL's WAL written per job (whole server);
	// for MariaDB, the redo log written (Innodb_os_log_written).
	LogBytesPerJob float64 `json:"log_bytes_per_job"`
	// LogFsyncsPerJob is MariaDB's Innodb_data_fsyncs per job (10.11 counts
	// redo log flushes there).
	LogFsyncsPerJob float64 `json:"log_fsyncs_per_job,omitempty"`
}

// StatementStat is one statement's calls and rows per job.
type StatementStat struct {
	Statement   string  `json:"statement"`
	CallsPerJob float64 `json:"calls_per_job"`
	RowsPerCall float64 `json:"rows_per_call"`
	MeanMillis  float64 `json:"mean_ms,omitempty"`
}

// statsProbe takes a snapshot before the work phase and computes the
// per-job difference after it.
type statsProbe interface {
	before(ctx context.Context) error
	after(ctx context.Context, jobs int64) (*DBStats, error)
}

// SampleMarker marks the statements a benchmark sends to watch a run (a
// comment in their SQL): pg_stat_statements leaves them out of the
// statements per job. MariaDB's Questions counts them; the caller knows
// how many it sent.
const SampleMarker = "lockstep-bench:sample"

// Probe is a run's database statistics for other subcommands: Before the
// work phase, After it.
type Probe struct{ p statsProbe }

// NewProbe returns a probe on db for dialect "postgres" or "mysql", nil
// for any other (SQLite has no server statistics).
func NewProbe(dialect string, db *sql.DB) *Probe {
	p := newStatsProbe(dialect, db)
	if p == nil {
		return nil
	}
	return &Probe{p}
}

// Before takes the snapshot the work phase is measured from.
func (p *Probe) Before(ctx context.Context) error { return p.p.before(ctx) }

// After returns the statistics since Before, per job.
func (p *Probe) After(ctx context.Context, jobs int64) (*DBStats, error) { return p.p.after(ctx, jobs) }

func newStatsProbe(dialect string, db *sql.DB) statsProbe {
	switch dialect {
	case "postgres":
		return &pgStats{db: db}
	case "mysql":
		return &mysqlStats{db: db}
	}
	return nil
}

type pgStats struct {
	db       *sql.DB
	startLSN string
	ok       bool
}

func (p *pgStats) before(ctx context.Context) error {
	// Loaded by the bench server's shared_preload_libraries; an external
	// server may not have it, and then only the WAL volume is reported.
	_, err := p.db.ExecContext(ctx, "CREATE EXTENSION IF NOT EXISTS pg_stat_statements")
	if err == nil {
		_, err = p.db.ExecContext(ctx, "SELECT pg_stat_statements_reset()")
	}
	p.ok = err == nil
	return p.db.QueryRowContext(ctx, "SELECT pg_current_wal_lsn()::text").Scan(&p.startLSN)
}

var whitespace = regexp.MustCompile(`\s+`)

func (p *pgStats) after(ctx context.Context, jobs int64) (*DBStats, error) {
	if jobs <= 0 {
		return nil, nil
	}
	s := &DBStats{}
	var wal float64
	if err := p.db.QueryRowContext(ctx, "SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), $1::pg_lsn)::float8", p.startLSN).Scan(&wal); err != nil {
		return nil, err
	}
	s.LogBytesPerJob = wal / float64(jobs)
	if !p.ok {
		return s, nil
	}
	rows, err := p.db.QueryContext(ctx, `
		SELECT query, calls, rows, mean_exec_time
		FROM pg_stat_statements
		WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())
		  AND query NOT LIKE '%pg_stat_statements%' AND query NOT LIKE '%pg_current_wal_lsn%'
		  AND query NOT LIKE '%`+SampleMarker+`%'
		ORDER BY calls DESC`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var total float64
	for rows.Next() {
		var q string
		var calls, nrows int64
		var mean float64
		if err := rows.Scan(&q, &calls, &nrows, &mean); err != nil {
			return nil, err
		}
		total += float64(calls)
		q = whitespace.ReplaceAllString(strings.TrimSpace(q), " ")
		if len(q) > 110 {
			q = q[:107] + "..."
		}
		s.Top = append(s.Top, StatementStat{
			Statement: q, CallsPerJob: float64(calls) / float64(jobs),
			RowsPerCall: float64(nrows) / float64(max(calls, 1)), MeanMillis: mean,
		})
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	s.StatementsPerJob = total / float64(jobs)
	s.Top = s.Top[:min(len(s.Top), 8)]
	return s, nil
}

// mysqlStats reads server-wide status counters; runs are sequential, so
// the difference is this run's, plus the probe's own few statements.
type mysqlStats struct {
	db     *sql.DB
	start  map[string]float64
	status []string
}

var mysqlCounters = []string{
	"Questions", "Com_select", "Com_insert", "Com_update", "Com_delete",
	"Com_begin", "Com_commit", "Com_rollback", "Com_stmt_execute",
	"Innodb_os_log_written", "Innodb_data_fsyncs",
}

func (m *mysqlStats) read(ctx context.Context) (map[string]float64, error) {
	rows, err := m.db.QueryContext(ctx, "SHOW GLOBAL STATUS")
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	want := map[string]bool{}
	for _, c := range mysqlCounters {
		want[c] = true
	}
	out := map[string]float64{}
	for rows.Next() {
		var name, value string
		if err := rows.Scan(&name, &value); err != nil {
			return nil, err
		}
		if want[name] {
			var v float64
			_, _ = fmt.Sscan(value, &v)
			out[name] = v
		}
	}
	return out, rows.Err()
}

func (m *mysqlStats) before(ctx context.Context) error {
	var err error
	m.start, err = m.read(ctx)
	return err
}

func (m *mysqlStats) after(ctx context.Context, jobs int64) (*DBStats, error) {
	if jobs <= 0 {
		return nil, nil
	}
	end, err := m.read(ctx)
	if err != nil {
		return nil, err
	}
	per := func(name string) float64 { return (end[name] - m.start[name]) / float64(jobs) }
	s := &DBStats{
		StatementsPerJob: per("Questions"),
		LogBytesPerJob:   per("Innodb_os_log_written"),
		LogFsyncsPerJob:  per("Innodb_data_fsyncs"),
	}
	for _, c := range mysqlCounters {
		if !strings.HasPrefix(c, "Com_") {
			continue
		}
		if v := per(c); v > 0 {
			s.Top = append(s.Top, StatementStat{Statement: c, CallsPerJob: v})
		}
	}
	sort.SliceStable(s.Top, func(i, j int) bool { return s.Top[i].CallsPerJob > s.Top[j].CallsPerJob })
	return s, nil
}
