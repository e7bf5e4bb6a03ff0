// Package attempt is the claim/cancel deadlock's scratch schema: the
// `attempt` table (attempts of runs), its data distributions, and the
// variants of its two statements (the claim by PRIMARY KEY and the range
// cancel of a run) that the lab reproduces, races and explains. The
// lab creates the table in a database the user names and drops it after.
package attempt

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
)

// Table is the scratch table's name; Create refuses to replace one that
// exists and was not made by the lab.
const Table = "attempt"

// schema is the attempt table, with the composite (run_id, status) index,
// the third fix the published measurements tried, added only by the
// variant that needs it.
const schema = `CREATE TABLE attempt (
  id     BIGINT PRIMARY KEY,
  run_id BIGINT NOT NULL,
  status VARCHAR(16) NOT NULL,
  KEY idx_run (run_id),
  KEY idx_status (status)
) ENGINE=InnoDB COMMENT='lockstep lab scratch table'`

const labComment = "lockstep lab scratch table"

// ErrExists is returned when an `attempt` table exists that the lab did
// not create: the lab never drops a user's table.
var ErrExists = errors.New("attempt: a table named attempt exists and was not created by the lockstep lab; use another database")

// Create makes the scratch table, replacing one a previous lab run left.
func Create(ctx context.Context, db *sql.DB) error {
	var comment string
	err := db.QueryRowContext(ctx, "SELECT TABLE_COMMENT FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = ?", Table).Scan(&comment)
	switch {
	case errors.Is(err, sql.ErrNoRows):
	case err != nil:
		return fmt.Errorf("attempt: look for table %s: %w", Table, err)
	case comment != labComment:
		return ErrExists
	default:
		if err := Drop(ctx, db); err != nil {
			return err
		}
	}
	if _, err := db.ExecContext(ctx, schema); err != nil {
		return fmt.Errorf("attempt: create table: %w", err)
	}
	return nil
}

// Drop removes the scratch table.
func Drop(ctx context.Context, db *sql.DB) error {
	if _, err := db.ExecContext(ctx, "DROP TABLE IF EXISTS attempt"); err != nil {
		return fmt.Errorf("attempt: drop table: %w", err)
	}
	return nil
}

// Distribution is a content of the table: Runs runs of RunSize attempts
// (ids 1.., run_id = (id-1) DIV RunSize + 1), each run's PENDING attempts
// being its last Pending ones, the rest DONE. Run Target (the one the
// cancel and the claim work on) may differ: TargetSize attempts of which
// TargetPending PENDING; 0 means like the others.
type Distribution struct {
	Name                      string
	Runs, RunSize, Pending    int
	TargetSize, TargetPending int
}

// Target is the run the statements work on: run 3, as in the published
// measurements.
const Target = 3

// Distributions are the published ones: the two-pending table the
// published reproduction ran on, then the three shapes of run 3 whose
// EXPLAINs the published measurements compare.
func Distributions() []Distribution {
	return []Distribution{
		{Name: "two-pending: 10 runs × 100, 2 PENDING each", Runs: 10, RunSize: 100, Pending: 2},
		{Name: "run 3 fresh: 100 PENDING; 99 runs × 100 DONE", Runs: 100, RunSize: 100, TargetPending: 100},
		{Name: "run 3: 5 PENDING / 95 DONE; 99 runs × 100 DONE", Runs: 100, RunSize: 100, TargetPending: 5},
		{Name: "run 3: 2 PENDING / 998 DONE; 99 runs × 100 DONE", Runs: 100, RunSize: 100, TargetSize: 1000, TargetPending: 2},
	}
}

// TwoPending is the two-pending table (10 runs × 100, the last 2 of each
// PENDING): the data the reproduction and the race use.
func TwoPending() Distribution { return Distributions()[0] }

// ParseDistribution reads NAME:RUNSIZE:PENDING (run 3's size and PENDING
// count among 99 other runs of 100 DONE attempts), for distributions a
// user adds.
func ParseDistribution(s string) (Distribution, error) {
	var d Distribution
	parts := strings.Split(s, ":")
	if len(parts) != 3 {
		return d, fmt.Errorf("attempt: distribution %q: want NAME:RUNSIZE:PENDING, e.g. \"tail:500:3\"", s)
	}
	if _, err := fmt.Sscanf(parts[1]+" "+parts[2], "%d %d", &d.TargetSize, &d.TargetPending); err != nil {
		return d, fmt.Errorf("attempt: distribution %q: RUNSIZE and PENDING must be numbers", s)
	}
	if d.TargetSize < 1 || d.TargetSize > 1_000_000 || d.TargetPending < 0 || d.TargetPending > d.TargetSize {
		return d, fmt.Errorf("attempt: distribution %q: need 1 <= RUNSIZE <= 1000000 and 0 <= PENDING <= RUNSIZE", s)
	}
	d.Name, d.Runs, d.RunSize = parts[0], 100, 100
	return d, nil
}

// Load replaces the table's rows with the distribution and refreshes the
// statistics the optimizer plans with.
func Load(ctx context.Context, db *sql.DB, d Distribution) error {
	if d.Runs < Target || d.RunSize < 1 {
		return fmt.Errorf("attempt: distribution %q needs at least %d runs", d.Name, Target)
	}
	size := func(run int) int {
		if run == Target && d.TargetSize > 0 {
			return d.TargetSize
		}
		return d.RunSize
	}
	pending := func(run int) int {
		if run == Target && (d.TargetSize > 0 || d.TargetPending > 0) {
			return d.TargetPending
		}
		return d.Pending
	}
	if _, err := db.ExecContext(ctx, "TRUNCATE TABLE attempt"); err != nil {
		return fmt.Errorf("attempt: load %s: %w", d.Name, err)
	}
	// Ids run on from one run to the next; each run's PENDING attempts are
	// its highest ids (in the two-pending table, ids ending in 99 and 00).
	first := int64(1)
	for run := 1; run <= d.Runs; run++ {
		n, p := size(run), pending(run)
		q := fmt.Sprintf(`INSERT INTO attempt (id, run_id, status)
			SELECT %d + n, %d, IF(n >= %d, 'PENDING', 'DONE') FROM %s WHERE n < %d`,
			first, run, n-p, numbers(n), n)
		if _, err := db.ExecContext(ctx, q); err != nil {
			return fmt.Errorf("attempt: load %s: %w", d.Name, err)
		}
		first += int64(n)
	}
	rows, err := db.QueryContext(ctx, "ANALYZE TABLE attempt")
	if err != nil {
		return fmt.Errorf("attempt: analyze: %w", err)
	}
	return rows.Close()
}

// numbers is a derived table n = 0..max-1 from cross-joined digits, which
// MySQL 8 and MariaDB both accept.
func numbers(max int) string {
	digits := "(SELECT 0 d UNION ALL SELECT 1 UNION ALL SELECT 2 UNION ALL SELECT 3 UNION ALL SELECT 4 UNION ALL SELECT 5 UNION ALL SELECT 6 UNION ALL SELECT 7 UNION ALL SELECT 8 UNION ALL SELECT 9)"
	var from, sum []string
	for i, p := 0, 1; p < max || i == 0; i, p = i+1, p*10 {
		from = append(from, fmt.Sprintf("%s d%d", digits, i))
		sum = append(sum, fmt.Sprintf("%d*d%d.d", p, i))
	}
	return fmt.Sprintf("(SELECT %s AS n FROM %s) nums", strings.Join(sum, " + "), strings.Join(from, ", "))
}
