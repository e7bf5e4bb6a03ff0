package sqlexec

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/lockstep-queue/lockstep/rowtype"
)

// JobColumns is the column list every catalogue selects job rows with, in
// the order scanJob reads them.
const JobColumns = "id, run_id, queue, kind, args, status, priority, available_at, attempts, max_attempts, started_at, heartbeat_at, finished_at, last_error, error_history, created_at, unique_key, metadata, output, waiting_on, dependents, callback, limit_key, claimed_by"

// UniqueHeld is true for a job whose status is one of its unique statuses:
// the predicate of the partial unique index on PostgreSQL and SQLite (and
// of the generated column on MySQL, spelt out in its migration).
const UniqueHeld = "(unique_states & (CASE status WHEN 'PENDING' THEN 1 WHEN 'BLOCKED' THEN 1 WHEN 'RUNNING' THEN 2 WHEN 'DONE' THEN 4 WHEN 'FAILED' THEN 8 WHEN 'CANCELLED' THEN 16 ELSE 0 END)) <> 0"

// RunColumns is the column list of run rows, in scanRun's order.
const RunColumns = "id, name, status, metadata, created_at, cancelled_at"

// TimeLayout is how the SQLite dialect stores times: fixed width, UTC,
// millisecond precision, the same text strftime('%Y-%m-%d %H:%M:%f') makes,
// so that text comparison is time comparison.
const TimeLayout = "2006-01-02 15:04:05.000"

// nullTime scans a time that may arrive as time.Time (MySQL with
// parseTime, PostgreSQL) or as text (SQLite).
type nullTime struct{ t *time.Time }

func (n nullTime) Scan(src any) error {
	switch v := src.(type) {
	case nil:
		*n.t = time.Time{}
	case time.Time:
		*n.t = v.UTC()
	case string:
		return n.parse(v)
	case []byte:
		return n.parse(string(v))
	default:
		return fmt.Errorf("scan time: unsupported type %T", src)
	}
	return nil
}

func (n nullTime) parse(s string) error {
	for _, layout := range []string{TimeLayout, "2006-01-02 15:04:05.999999999", time.RFC3339Nano, "2006-01-02 15:04:05.999999999-07:00"} {
		if t, err := time.Parse(layout, s); err == nil {
			*n.t = t.UTC()
			return nil
		}
	}
	return fmt.Errorf("scan time: cannot parse %q", s)
}

var _ interface{ Scan(any) error } = nullTime{}

// nullInt64 scans a nullable integer into 0.
type nullInt64 struct{ v *int64 }

func (n nullInt64) Scan(src any) error {
	switch v := src.(type) {
	case nil:
		*n.v = 0
	case int64:
		*n.v = v
	case int32:
		*n.v = int64(v)
	case []byte:
		_, err := fmt.Sscan(string(v), n.v)
		return err
	case string:
		_, err := fmt.Sscan(v, n.v)
		return err
	default:
		return fmt.Errorf("scan int: unsupported type %T", src)
	}
	return nil
}

// nullString scans a nullable text into "".
type nullString struct{ v *string }

func (n nullString) Scan(src any) error {
	switch v := src.(type) {
	case nil:
		*n.v = ""
	case string:
		*n.v = v
	case []byte:
		*n.v = string(v)
	default:
		return fmt.Errorf("scan text: unsupported type %T", src)
	}
	return nil
}

// jsonBytes scans JSON that may arrive as text or bytes, copying it because
// drivers may reuse their buffers.
type jsonBytes struct{ v *json.RawMessage }

func (j jsonBytes) Scan(src any) error {
	switch v := src.(type) {
	case nil:
		*j.v = nil
	case string:
		*j.v = json.RawMessage(v)
	case []byte:
		*j.v = append(json.RawMessage(nil), v...)
	default:
		// pgx's native path may hand over decoded JSON.
		b, err := json.Marshal(v)
		if err != nil {
			return fmt.Errorf("scan json: %w", err)
		}
		*j.v = b
	}
	return nil
}

func scanJob(rows Rows, extra ...any) (*rowtype.JobRow, error) {
	j := &rowtype.JobRow{}
	var status string
	var history json.RawMessage
	var priority, attempts, maxAttempts, waitingOn, dependents int64
	dest := []any{
		&j.ID, nullInt64{&j.RunID}, &j.Queue, &j.Kind, jsonBytes{&j.Args}, &status,
		nullInt64{&priority}, nullTime{&j.AvailableAt}, nullInt64{&attempts}, nullInt64{&maxAttempts},
		nullTime{&j.StartedAt}, nullTime{&j.HeartbeatAt}, nullTime{&j.FinishedAt},
		nullString{&j.LastError}, jsonBytes{&history}, nullTime{&j.CreatedAt},
		nullString{&j.UniqueKey}, jsonBytes{&j.Metadata}, jsonBytes{&j.Output},
		nullInt64{&waitingOn}, nullInt64{&dependents}, nullString{&j.Callback}, nullString{&j.LimitKey}, nullString{&j.ClaimedBy},
	}
	if err := rows.Scan(append(dest, extra...)...); err != nil {
		return nil, fmt.Errorf("scan job: %w", err)
	}
	j.Status = rowtype.JobStatus(status)
	j.Priority, j.Attempts, j.MaxAttempts = int(priority), int(attempts), int(maxAttempts)
	j.WaitingOn, j.Dependents = int(waitingOn), int(dependents)
	if len(history) > 0 {
		if err := json.Unmarshal(history, &j.Errors); err != nil {
			return nil, fmt.Errorf("scan job %d: error history: %w", j.ID, err)
		}
	}
	return j, nil
}

// scanJobs reads every row and reports any error, including one from
// Close: a single-statement claim may commit when its result set ends, and
// rows of a statement that failed there were never claimed.
func scanJobs(rows Rows) ([]*rowtype.JobRow, error) {
	var out []*rowtype.JobRow
	for rows.Next() {
		j, err := scanJob(rows)
		if err != nil {
			rows.Close()
			return nil, err
		}
		out = append(out, j)
	}
	if err := errors.Join(rows.Err(), rows.Close()); err != nil {
		return nil, err
	}
	return out, nil
}

func scanRun(rows Rows) (*rowtype.RunRow, error) {
	r := &rowtype.RunRow{}
	var status string
	if err := rows.Scan(&r.ID, &r.Name, &status, jsonBytes{&r.Metadata}, nullTime{&r.CreatedAt}, nullTime{&r.CancelledAt}); err != nil {
		return nil, fmt.Errorf("scan run: %w", err)
	}
	r.Status = rowtype.RunStatus(status)
	return r, nil
}
