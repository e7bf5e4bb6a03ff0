package dashboard

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	gomysql "github.com/go-sql-driver/mysql"

	"github.com/lockstep-queue/lockstep/lockdiag/deadlock"
	"github.com/lockstep-queue/lockstep/lockdiag/lockview"
)

// lockMonitor reads lock waits on demand and keeps the distinct deadlocks
// InnoDB reported while the dashboard was watching.
type lockMonitor struct {
	dialect string
	db      *sql.DB
	max     int

	// flavorSem guards flavor and makes one Detect at a time; pollSem
	// makes one SHOW ENGINE INNODB STATUS at a time. They are channels so
	// that a request waiting for another one's query (which waits for a
	// database that does not answer) gives up with its own deadline.
	flavorSem chan struct{}
	flavor    lockview.Flavor

	pollSem chan struct{}

	mu       sync.Mutex
	schema   string
	seen     map[string]bool
	ring     []*seenDeadlock // newest first
	other    int             // distinct reports about other databases, not kept
	lastErr  error
	lastPoll time.Time
}

// seenDeadlock is one decoded LATEST DETECTED DEADLOCK.
type seenDeadlock struct {
	Key    string
	SeenAt time.Time
	Report *deadlock.Report
	Text   string // the deadlock package's text rendering
}

func newLockMonitor(dialect string, db *sql.DB, max int) *lockMonitor {
	return &lockMonitor{dialect: dialect, db: db, max: max, seen: map[string]bool{},
		flavorSem: make(chan struct{}, 1), pollSem: make(chan struct{}, 1)}
}

// acquire takes sem, or gives up when ctx ends while another holds it.
func acquire(ctx context.Context, sem chan struct{}, what string) error {
	select {
	case sem <- struct{}{}:
		return nil
	default:
	}
	select {
	case sem <- struct{}{}:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("waiting for another request's %s: %w", what, ctx.Err())
	}
}

func (m *lockMonitor) getFlavor(ctx context.Context) (lockview.Flavor, error) {
	if err := acquire(ctx, m.flavorSem, "server version check"); err != nil {
		return "", err
	}
	defer func() { <-m.flavorSem }()
	if m.flavor != "" {
		return m.flavor, nil
	}
	f, err := lockview.Detect(ctx, m.db)
	if err != nil {
		return "", err
	}
	m.flavor = f
	return f, nil
}

// innodbStatus reads SHOW ENGINE INNODB STATUS; without the PROCESS
// privilege the error wraps lockview.ErrPrivilege.
func innodbStatus(ctx context.Context, db *sql.DB) (string, error) {
	var typ, name, status string
	err := db.QueryRowContext(ctx, "SHOW ENGINE INNODB STATUS").Scan(&typ, &name, &status)
	if err != nil {
		var me *gomysql.MySQLError
		if errors.As(err, &me) && (me.Number == 1227 || me.Number == 1142) {
			return "", fmt.Errorf("%w (SHOW ENGINE INNODB STATUS: %v)", lockview.ErrPrivilege, err)
		}
		return "", fmt.Errorf("SHOW ENGINE INNODB STATUS: %w", err)
	}
	return status, nil
}

// pollDeadlocks reads the server's latest deadlock report and keeps it if
// it is new and about a table of this database (the report is
// server-wide; other databases' deadlocks are counted, not shown). On
// PostgreSQL and SQLite it does nothing.
func (m *lockMonitor) pollDeadlocks(ctx context.Context) error {
	if m.dialect != dialectMySQL {
		return nil
	}
	err := acquire(ctx, m.pollSem, "SHOW ENGINE INNODB STATUS")
	if err == nil {
		defer func() { <-m.pollSem }()
		err = m.poll(ctx)
	}
	if err != nil && abandoned(ctx) {
		// The caller went away (a page load the user left, or serve
		// stopping): that says nothing about the server, so the last
		// poll's outcome stays what the page shows.
		return err
	}
	m.mu.Lock()
	m.lastErr, m.lastPoll = err, time.Now()
	m.mu.Unlock()
	return err
}

// abandoned reports a context cancelled by its caller, as opposed to one
// whose deadline passed (a timeout is the database being slow, which the
// page should show).
func abandoned(ctx context.Context) bool {
	return errors.Is(ctx.Err(), context.Canceled)
}

func (m *lockMonitor) poll(ctx context.Context) error {
	m.mu.Lock()
	schema := m.schema
	m.mu.Unlock()
	if schema == "" {
		var s sql.NullString
		if err := m.db.QueryRowContext(ctx, "SELECT DATABASE()").Scan(&s); err != nil {
			return fmt.Errorf("current database: %w", err)
		}
		schema = s.String
		m.mu.Lock()
		m.schema = schema
		m.mu.Unlock()
	}
	text, err := innodbStatus(ctx, m.db)
	if err != nil {
		return err
	}
	reports, perr := deadlock.ParseString(text)
	if errors.Is(perr, deadlock.ErrNoReport) {
		return nil
	}
	now := time.Now()
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, r := range reports {
		key := deadlockKey(r)
		if m.seen[key] {
			continue
		}
		m.seen[key] = true
		if schema != "" && !mentionsSchema(r, schema) {
			m.other++
			continue
		}
		var b strings.Builder
		_ = r.WriteText(&b)
		m.ring = append([]*seenDeadlock{{Key: key, SeenAt: now, Report: r, Text: b.String()}}, m.ring...)
		if len(m.ring) > m.max {
			m.ring = m.ring[:m.max]
		}
	}
	// Forget keys no longer in the ring, except the report just read
	// (still the server's latest), so the set stays bounded.
	if len(m.seen) > 4*m.max {
		keep := map[string]bool{}
		for _, d := range m.ring {
			keep[d.Key] = true
		}
		for _, r := range reports {
			keep[deadlockKey(r)] = true
		}
		m.seen = keep
	}
	if perr != nil && len(reports) == 0 {
		return fmt.Errorf("decode the latest deadlock: %w", perr)
	}
	return nil
}

// deadlockKey tells reports apart: the time InnoDB printed and the
// transactions in it.
func deadlockKey(r *deadlock.Report) string {
	var b strings.Builder
	b.WriteString(strings.Join(strings.Fields(r.Time), " "))
	for _, t := range r.Transactions {
		fmt.Fprintf(&b, "|%d:%d:%d", t.Number, t.TrxID, t.ThreadID)
	}
	return b.String()
}

func mentionsSchema(r *deadlock.Report, schema string) bool {
	prefix := schema + "."
	for _, t := range r.Transactions {
		locks := append(append([]*deadlock.Lock{}, t.Holds...), t.Conflicts...)
		if t.Waits != nil {
			locks = append(locks, t.Waits)
		}
		for _, l := range locks {
			if strings.HasPrefix(l.Table, prefix) {
				return true
			}
		}
	}
	return false
}

func (m *lockMonitor) deadlocks() ([]*seenDeadlock, int, error, time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]*seenDeadlock(nil), m.ring...), m.other, m.lastErr, m.lastPoll
}

// ---- views ----

type waitView struct {
	lockview.Wait
	For string
}

// waitsData is the page's "waits now": the waits for locks on this
// database's tables, as the lock table below it shows them. The server's
// lock tables are shared with its other databases; their waits can block
// nothing of this database's, and their statements and keys are theirs,
// so they are only counted (Elsewhere).
type waitsData struct {
	Supported bool
	Message   string // why there is nothing to show, or the error
	Privilege bool
	Waits     []waitView
	Elsewhere int
	At        time.Time
}

// ElsewhereText says how many waits on other databases' tables are not
// shown ("" for none).
func (d waitsData) ElsewhereText() string {
	switch d.Elsewhere {
	case 0:
		return ""
	case 1:
		return "1 lock wait on tables of other databases on this server is not shown"
	}
	return fmt.Sprintf("%d lock waits on tables of other databases on this server are not shown", d.Elsewhere)
}

type lockView struct {
	Desc    string
	Records []string
	More    int
	Derived bool
}

type trxView struct {
	*deadlock.Transaction
	Victim bool
	Holds  []lockView
	Waits  *lockView
}

type deadlockView struct {
	SeenAt       time.Time
	Time         string
	Format       string
	Victim       int
	Transactions []trxView
	Pattern      *deadlock.Pattern
	// PatternName is the decoder's name for the shape, not-recognised
	// included; PatternWhere the table and index it is about, as the
	// decoder's text says them; Explanation and Fix its words, line by
	// line (no fix for a shape not recognised: none is guessed).
	PatternName  string
	PatternWhere string
	Explanation  []string
	Fix          string
	Text         string
}

type locksData struct {
	base
	Kind      string // "innodb", "postgres" or "sqlite"
	Flavor    lockview.Flavor
	Note      string
	Waits     waitsData
	ShowTable bool
	Table     []lockview.Lock
	TableErr  string

	Deadlocks   []deadlockView
	Groups      []*deadlock.Group
	Other       int
	DLMessage   string
	DLPrivilege bool
	LastPoll    time.Time

	PGDeadlocks int64
	PGSince     time.Time
	PGLogLocks  string
	PGMessage   string
}

// maxRecordsShown bounds the records listed per lock, as the CLI does.
const maxRecordsShown = 6

func viewLock(l *deadlock.Lock) lockView {
	v := lockView{Derived: l.Inferred}
	if l.Kind == deadlock.TableLock {
		v.Desc = fmt.Sprintf("table lock %s on %s", l.Mode, l.Table)
	} else {
		v.Desc = fmt.Sprintf("%s of %s, %s %s", l.Index, l.Table, l.Mode, l.Kind)
	}
	for i, rec := range l.Records {
		if i == maxRecordsShown {
			v.More = len(l.Records) - maxRecordsShown
			break
		}
		v.Records = append(v.Records, "heap no "+strconv.FormatUint(rec.HeapNo, 10)+": "+rec.String())
	}
	return v
}

func viewDeadlock(d *seenDeadlock) deadlockView {
	r := d.Report
	v := deadlockView{SeenAt: d.SeenAt, Time: strings.Join(strings.Fields(r.Time), " "), Format: r.Format, Victim: r.Victim, Pattern: r.Pattern, Text: d.Text}
	for _, t := range r.Transactions {
		tv := trxView{Transaction: t, Victim: t.Number == r.Victim}
		for _, l := range t.Holds {
			tv.Holds = append(tv.Holds, viewLock(l))
		}
		if t.Waits != nil {
			w := viewLock(t.Waits)
			tv.Waits = &w
		}
		v.Transactions = append(v.Transactions, tv)
	}
	v.PatternName = r.PatternName()
	if p := r.Pattern; p != nil {
		v.PatternWhere = patternWhere(p)
		v.Explanation = strings.Split(p.Explanation, "\n")
		v.Fix = p.Fix
	} else {
		v.Explanation = []string{notRecognised}
	}
	return v
}

// notRecognised is what the decoder says of a report whose locks prove no
// known shape (its text rendering says the same).
const notRecognised = "The locks above do not prove any of the known shapes; no fix is guessed."

// patternWhere is where a pattern is, as the decoder's text puts it:
// "on T (S vs PRIMARY)" for opposite index orders, "on T (index I)" for
// the others that name an index, "on T", or nothing (a cycle over several
// tables names them in its explanation).
func patternWhere(p *deadlock.Pattern) string {
	var b strings.Builder
	if p.Table != "" {
		b.WriteString("on " + p.Table)
	}
	switch {
	case p.Name == deadlock.PatternOppositeIndexOrder && p.Secondary != "":
		fmt.Fprintf(&b, " (%s vs PRIMARY)", p.Secondary)
	case p.Index != "":
		fmt.Fprintf(&b, " (index %s)", p.Index)
	}
	return strings.TrimSpace(b.String())
}

// waits reads the current lock waits, turning a refusal into a message.
// It also returns the error, for the caller to tell an unavailable
// database from a refusal.
func (s *Server) waits(ctx context.Context) (waitsData, error) {
	d := waitsData{At: time.Now()}
	if s.cfg.Dialect == dialectSQLite {
		d.Message = "SQLite locks the whole database file for a writer: there are no row locks and no lock waits to show (a blocked writer gets SQLITE_BUSY and lockstep retries it)."
		return d, nil
	}
	d.Supported = true
	f, err := s.locks.getFlavor(ctx)
	if err == nil {
		var ws []lockview.Wait
		ws, err = lockview.Waits(ctx, s.db, f)
		for _, w := range ws {
			d.Waits = append(d.Waits, waitView{Wait: w, For: fmtDur(w.Waiting)})
		}
		if err == nil {
			d.Elsewhere, err = lockview.OtherWaits(ctx, s.db, f)
		}
	}
	if err != nil {
		d.Privilege = errors.Is(err, lockview.ErrPrivilege)
		d.Message = redact(err.Error())
	}
	return d, err
}

func (s *Server) handleLockWaits(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := s.ctx(r)
	defer cancel()
	d, err := s.waits(ctx)
	if s.unavailable(err) {
		s.dbError(w, r, "reading lock waits", err)
		return
	}
	s.render(w, r, http.StatusOK, "partials.html", "lock-waits", d)
}

func (s *Server) handleLocks(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := s.ctx(r)
	defer cancel()
	waits, err := s.waits(ctx)
	if s.unavailable(err) {
		s.dbError(w, r, "reading lock waits", err)
		return
	}
	d := locksData{base: s.base(r, "Locks", "locks"), Waits: waits}
	switch s.cfg.Dialect {
	case dialectSQLite:
		d.Kind = "sqlite"
	case dialectPostgres:
		d.Kind = "postgres"
		s.pgDeadlocks(ctx, &d)
	default:
		d.Kind = "innodb"
		if err := s.locks.pollDeadlocks(ctx); err != nil && !abandoned(ctx) {
			s.logger.Warn("dashboard: read deadlocks", "err", redact(err.Error()))
		}
		ring, other, err, last := s.locks.deadlocks()
		d.Other, d.LastPoll = other, last
		if err != nil {
			d.DLPrivilege = errors.Is(err, lockview.ErrPrivilege)
			d.DLMessage = redact(err.Error())
		}
		reports := make([]*deadlock.Report, 0, len(ring))
		for _, sd := range ring {
			d.Deadlocks = append(d.Deadlocks, viewDeadlock(sd))
			reports = append(reports, sd.Report)
		}
		if len(reports) > 1 {
			d.Groups = deadlock.Aggregate(reports)
		}
	}
	if d.Waits.Supported {
		if f, err := s.locks.getFlavor(ctx); err == nil {
			d.Flavor = f
			d.Note = lockview.LocksNote(f)
			if r.URL.Query().Get("table") == "1" {
				d.ShowTable = true
				locks, err := lockview.Locks(ctx, s.db, f)
				if err != nil {
					d.TableErr = redact(err.Error())
				}
				d.Table = locks
			}
		}
	}
	s.render(w, r, http.StatusOK, "locks.html", "layout", d)
}

// pgDeadlocks reads PostgreSQL's deadlock counter; its reports go to the
// server log only.
func (s *Server) pgDeadlocks(ctx context.Context, d *locksData) {
	var n sql.NullInt64
	var since sql.NullTime
	err := s.db.QueryRowContext(ctx, "SELECT deadlocks, stats_reset FROM pg_stat_database WHERE datname = current_database()").Scan(&n, &since)
	if err != nil {
		d.PGMessage = "reading pg_stat_database: " + redact(err.Error())
		return
	}
	d.PGDeadlocks, d.PGSince = n.Int64, since.Time
	var logLocks string
	if err := s.db.QueryRowContext(ctx, "SELECT current_setting('log_lock_waits')").Scan(&logLocks); err == nil {
		d.PGLogLocks = logLocks
	}
}
