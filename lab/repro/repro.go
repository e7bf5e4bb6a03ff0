// Package repro is the claim/cancel deadlock's two-session reproduction,
// scripted: session A holds PRIMARY 300 with a locking read and then claims
// it; session B cancels run 3; the lock wait is confirmed from the server
// before A goes on. The result is a timeline like the published one, ending
// in error 1213 for the unsafe variants and in no error for the fix.
package repro

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"text/tabwriter"

	gomysql "github.com/go-sql-driver/mysql"

	"github.com/lockstep-queue/lockstep/lab/attempt"
	"github.com/lockstep-queue/lockstep/lockdiag/locktest"
	"github.com/lockstep-queue/lockstep/lockdiag/lockview"
)

// Options choose the variant reproduced.
type Options struct {
	Cancel attempt.Cancel
	Claim  attempt.Claim
	// Isolation of both sessions; default REPEATABLE READ, as in the
	// published measurements.
	Isolation sql.IsolationLevel
	// Keep leaves the scratch table in place afterwards.
	Keep bool
	// WhileWaiting, when set, is called once B's lock wait has been seen
	// and before A goes on: the moment the published data_locks table was
	// read.
	WhileWaiting func(ctx context.Context) error
}

// Step is one line of the timeline.
type Step struct {
	N         int
	Session   string // "A" (the claim) or "B" (the cancel)
	Statement string
	Result    string
}

// Result is the timeline and what it came to.
type Result struct {
	Steps []Step
	// Deadlock is true when either session got error 1213; Victim names
	// which ("A" or "B").
	Deadlock bool
	Victim   string
	// Plans are the indexes the server chose for the claim and the cancel
	// (EXPLAIN before the run): the reason for what happened.
	ClaimKey, CancelKey string
	// Wait is the cancel's lock wait as the server's lock table showed it
	// (session B's, by its CONNECTION_ID()); nil when B did not wait.
	Wait *lockview.Wait
}

// held is the attempt both sessions want: run 3's second PENDING attempt.
const held = int64(300)

type recorder struct {
	mu    sync.Mutex
	steps []Step
}

func (r *recorder) add(session, stmt, result string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.steps = append(r.steps, Step{N: len(r.steps) + 1, Session: session, Statement: stmt, Result: result})
	return len(r.steps) - 1
}

func (r *recorder) set(i int, result string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.steps[i].Result = result
}

// Run creates the attempt table in db's database, loads the two-pending
// data, and plays the two sessions. observer is another pool on the same
// database, used only to read the lock tables (PROCESS privilege).
func Run(ctx context.Context, db, observer *sql.DB, opts Options) (*Result, error) {
	if opts.Isolation == sql.LevelDefault {
		opts.Isolation = sql.LevelRepeatableRead
	}
	flavor, err := lockview.Detect(ctx, db)
	if err != nil {
		return nil, err
	}
	if flavor == lockview.Postgres {
		return nil, errors.New("repro: the claim/cancel deadlock is InnoDB's (index-record locks); point --dsn at MySQL or MariaDB")
	}
	if err := attempt.Create(ctx, db); err != nil {
		return nil, err
	}
	if !opts.Keep {
		defer func() { _ = attempt.Drop(context.WithoutCancel(ctx), db) }()
	}
	if opts.Cancel.Setup != "" {
		if _, err := db.ExecContext(ctx, opts.Cancel.Setup); err != nil {
			return nil, fmt.Errorf("repro: %s: %w", opts.Cancel.Name, err)
		}
	}
	if err := attempt.Load(ctx, db, attempt.TwoPending()); err != nil {
		return nil, err
	}
	res := &Result{}
	claimSQL := attempt.Stmt{SQL: opts.Claim.SQL, Args: []any{held}}
	if res.ClaimKey, err = explainKey(ctx, db, claimSQL); err != nil {
		return nil, err
	}
	cancelPlan := opts.Cancel.Range
	if cancelPlan == "" {
		cancelPlan = opts.Cancel.ByID
	}
	if res.CancelKey, err = explainKey(ctx, db, attempt.Stmt{SQL: cancelPlan, Args: []any{int64(attempt.Target)}}); err != nil {
		return nil, err
	}

	rec := &recorder{}
	var bMu sync.Mutex
	bCurrent, bDone := -1, false
	var bSession int64 // B's CONNECTION_ID(), once B has begun
	var bWait *lockview.Wait
	txOpts := &sql.TxOptions{Isolation: opts.Isolation}
	// bWaits confirms that B itself waits: the lock table is the server's
	// and the database may be shared, so a wait between other sessions must
	// not pass for B's. It gives up when B has finished without waiting.
	bWaits := func(ctx context.Context) error {
		ws, err := lockview.WaitFor(ctx, observer, flavor, func(w lockview.Wait) bool {
			bMu.Lock()
			defer bMu.Unlock()
			return bSession != 0 && w.WaiterID == bSession
		}, func() bool {
			bMu.Lock()
			defer bMu.Unlock()
			return bDone
		})
		if err != nil {
			return err
		}
		bMu.Lock()
		defer bMu.Unlock()
		for _, w := range ws {
			if w.WaiterID == bSession {
				bWait = &w
				break
			}
		}
		return nil
	}

	a := func(ctx context.Context, pause func()) error {
		tx, err := db.BeginTx(ctx, txOpts)
		if err != nil {
			return err
		}
		defer func() { _ = tx.Rollback() }()
		lock := fmt.Sprintf("BEGIN; SELECT id FROM attempt WHERE id=%d FOR UPDATE", held)
		var id int64
		if err := tx.QueryRowContext(ctx, "SELECT id FROM attempt WHERE id = ? FOR UPDATE", held).Scan(&id); err != nil {
			rec.add("A", lock, describe(err))
			return err
		}
		rec.add("A", lock, "1 row (holds PRIMARY 300)")
		pause()
		if err := bWaits(ctx); err != nil {
			return fmt.Errorf("waiting for B's lock wait: %w", err)
		}
		if opts.WhileWaiting != nil {
			// B is still blocked: A has not gone on.
			if err := opts.WhileWaiting(ctx); err != nil {
				return fmt.Errorf("while waiting: %w", err)
			}
		}
		bMu.Lock()
		if bWait != nil && !bDone && bCurrent >= 0 {
			rec.set(bCurrent, "waits")
		}
		bMu.Unlock()
		n, err := exec(ctx, tx, claimSQL)
		if err != nil {
			rec.add("A", claimSQL.Text(), describe(err))
			return err
		}
		rec.add("A", claimSQL.Text(), rowsWord(n))
		if err := tx.Commit(); err != nil {
			rec.add("A", "COMMIT", describe(err))
			return err
		}
		rec.add("A", "COMMIT", "ok")
		return nil
	}
	b := func(ctx context.Context) error {
		defer func() {
			bMu.Lock()
			bDone = true
			bMu.Unlock()
		}()
		// B's session, named before its transaction begins, so that its
		// wait can be told from others'.
		conn, err := db.Conn(ctx)
		if err != nil {
			return err
		}
		defer conn.Close()
		var id int64
		if err := conn.QueryRowContext(ctx, "SELECT CONNECTION_ID()").Scan(&id); err != nil {
			return err
		}
		bMu.Lock()
		bSession = id
		bMu.Unlock()
		tx, err := conn.BeginTx(ctx, txOpts)
		if err != nil {
			return err
		}
		defer func() { _ = tx.Rollback() }()
		stmts, err := opts.Cancel.Statements(ctx, tx, int64(attempt.Target))
		if err != nil {
			return err
		}
		if opts.Cancel.Range == "" {
			var ids []string
			for _, s := range stmts {
				ids = append(ids, fmt.Sprint(s.Args[0]))
			}
			rec.add("B", "BEGIN; "+strings.Replace(opts.Cancel.SelectIDs, "?", fmt.Sprint(attempt.Target), 1), fmt.Sprintf("%d rows: %s (no locks)", len(stmts), strings.Join(ids, ", ")))
		}
		for i, s := range stmts {
			text := s.Text()
			if i == 0 && opts.Cancel.Range != "" {
				text = "BEGIN; " + text
			}
			bMu.Lock()
			bCurrent = rec.add("B", text, "…")
			step := bCurrent
			bMu.Unlock()
			n, err := exec(ctx, tx, s)
			if err != nil {
				rec.set(step, rec.resultOf(step, describe(err)))
				return err
			}
			rec.set(step, rec.resultOf(step, rowsWord(n)))
		}
		if err := tx.Commit(); err != nil {
			rec.add("B", "COMMIT", describe(err))
			return err
		}
		rec.add("B", "COMMIT", "ok")
		return nil
	}
	out, err := locktest.Interleave(ctx, observer, flavor, a, b)
	if err != nil {
		return nil, fmt.Errorf("repro: %w", err)
	}
	if w := bWait; w != nil {
		// The table is printed as the server names it, database and all:
		// the lock table is the server's, so the database is what shows
		// that the wait is on the reproduction's own table.
		for i, s := range rec.steps {
			if s.Result == "waits" || strings.HasPrefix(s.Result, "waits, then") {
				rec.steps[i].Result = strings.Replace(s.Result, "waits", fmt.Sprintf("waits for %s %s %s of %s (seen in the server's lock table)", w.Index, w.Mode, w.Data, w.Table), 1)
			}
		}
	}
	for _, pair := range []struct {
		who string
		err error
	}{{"A", out.ErrA}, {"B", out.ErrB}} {
		if isDeadlock(pair.err) {
			res.Deadlock, res.Victim = true, pair.who
		} else if pair.err != nil {
			return nil, fmt.Errorf("repro: session %s: %w", pair.who, pair.err)
		}
	}
	res.Steps, res.Wait = rec.steps, bWait
	return res, nil
}

// resultOf appends a blocked statement's eventual outcome to "waits".
func (r *recorder) resultOf(i int, final string) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	if strings.HasPrefix(r.steps[i].Result, "waits") {
		return r.steps[i].Result + ", then " + final
	}
	return final
}

func exec(ctx context.Context, tx *sql.Tx, s attempt.Stmt) (int64, error) {
	res, err := tx.ExecContext(ctx, s.SQL, s.Args...)
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

func rowsWord(n int64) string {
	if n == 1 {
		return "1 row"
	}
	return fmt.Sprintf("%d rows", n)
}

func isDeadlock(err error) bool {
	var me *gomysql.MySQLError
	return errors.As(err, &me) && me.Number == 1213
}

func describe(err error) string {
	var me *gomysql.MySQLError
	if errors.As(err, &me) {
		if me.Number == 1213 {
			return "ERROR 1213 (40001): Deadlock found; this transaction was rolled back"
		}
		return fmt.Sprintf("ERROR %d: %s", me.Number, me.Message)
	}
	return "error: " + err.Error()
}

func explainKey(ctx context.Context, db *sql.DB, s attempt.Stmt) (string, error) {
	plan, err := attempt.Explain(ctx, db, s)
	if err != nil {
		return "", fmt.Errorf("repro: %w", err)
	}
	return plan["key"], nil
}

// WriteText prints the timeline as the published reproduction does.
func (r *Result) WriteText(w io.Writer) error {
	fmt.Fprintf(w, "plans: claim finds attempt 300 through %s; cancel finds run 3's attempts through %s\n\n", r.ClaimKey, r.CancelKey)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "STEP\tSESSION\tSTATEMENT\tRESULT")
	for _, s := range r.Steps {
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\n", s.N, s.Session, s.Statement, s.Result)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if r.Deadlock {
		who := map[string]string{"A": "the claim", "B": "the cancel"}[r.Victim]
		_, err := fmt.Fprintf(w, "\ndeadlock: InnoDB rolled back session %s (%s)\n", r.Victim, who)
		return err
	}
	_, err := fmt.Fprintln(w, "\nno deadlock: the session that came second waited on PRIMARY and went on")
	return err
}
