// Package catalog declares the statements a driver may issue, each with the
// access path it is written to take. The runtime executes only statements
// found here; the plan guard and the lab's audit read the same declarations,
// so a statement cannot drift from what it claims to lock.
package catalog

import (
	"fmt"
	"maps"
	"sort"
	"strings"
)

// Index names the access path of a statement in a dialect-neutral way; each
// catalogue maps it to the dialect's own index name (PRIMARY vs
// lockstep_jobs_pkey) through Catalog.IndexNames.
type Index string

// The indexes of the two queue tables.
const (
	RunsPrimary   Index = "runs.primary"
	JobsPrimary   Index = "jobs.primary"
	JobsClaim     Index = "jobs.claim"
	JobsRun       Index = "jobs.run"
	JobsHeartbeat Index = "jobs.heartbeat"
	// JobsQueueStatus is (queue, status, heartbeat_at): the counts and
	// listings of the stats, the CLI and the dashboard.
	JobsQueueStatus Index = "jobs.queue_status"
	// JobsUnique holds a unique job's key while the job's status is one of
	// its unique statuses.
	JobsUnique Index = "jobs.unique"
	// DepsPrimary is a workflow edge's (job_id, depends_on): the
	// dependencies of a job.
	DepsPrimary Index = "deps.primary"
	// DepsUp is (depends_on, job_id): the dependents of a job.
	DepsUp Index = "deps.up"
	// JobsLimit is (queue, limit_key, status, id): a key's RUNNING jobs,
	// its BLOCKED ones in id order, a sequence's first live job.
	JobsLimit Index = "jobs.limit"
	// QueuesPrimary is a queue's settings row: a globally limited queue's
	// claims lock it first.
	QueuesPrimary Index = "queues.primary"
	// LimitKeysPrimary is (queue, limit_key): the lock of one key.
	LimitKeysPrimary Index = "limit_keys.primary"
	// LimitStartsPrimary is (queue, limit_key, started_at, job_id): a rate
	// window's starts.
	LimitStartsPrimary Index = "limit_starts.primary"
	// ProcessesPrimary is a registered process's id: its heartbeat, its
	// delete, and the (small) table read in id order.
	ProcessesPrimary Index = "processes.primary"
	// HistoryPrimary is the history rollup's (bucket, queue, kind): a time
	// range of it is a key range.
	HistoryPrimary Index = "history.primary"
	// JobsText is the optional text index over the jobs' args and
	// metadata (capability TextIndex): a search through it.
	JobsText Index = "jobs.text"
	// None is the access path of statements that read no table rows to find
	// their targets (an INSERT, a bookkeeping query).
	None Index = ""
)

// Statement is one SQL statement with its declared access path.
type Statement struct {
	// Name identifies the statement across dialects (JobClaim).
	Name Name
	// SQL is the statement text. Statements with IDList set contain the
	// marker {ids} where the dialect expands one placeholder per id, unless
	// the dialect passes the list as one array parameter.
	SQL string
	// Table is the table the statement reads or writes ("lockstep_jobs").
	Table string
	// Finds is the index the statement uses to find its rows.
	Finds Index
	// Changes lists the indexes whose entries the statement modifies.
	Changes []Index
	// Locks is true when the statement takes row locks (a locking read,
	// UPDATE, DELETE); false for consistent, non-locking reads and inserts.
	Locks bool
	// Claim marks the claim query: its plan must not sort and must stop at
	// its LIMIT.
	Claim bool
	// IDList marks statements whose last parameter is a list of ids, all
	// visited through the primary key in ascending order.
	IDList bool
	// KeyList marks statements with a list of limit keys: the marker
	// {keys} expands to one placeholder per key, unless the dialect passes
	// the list as one array parameter (then it is the last parameter).
	KeyList bool
	// Returning marks writes that return the ids they wrote (RETURNING
	// id): the executor reads an insert's ids from its rows instead of
	// LastInsertId, and knows which rows a fenced batch changed without a
	// transaction around it. It is a statement's, not a dialect's: MariaDB
	// returns from an INSERT but not from an UPDATE.
	Returning bool
	// Rows marks multi-row INSERTs whose {rows} marker expands to RowSQL once
	// per row.
	Rows bool
	// RowSQL is the VALUES tuple for one row of a Rows statement.
	RowSQL string
}

// Spec is what a dialect declares about itself besides its statements.
type Spec struct {
	// Dialect names the catalogue: "mariadb", "mysql", "postgres", "sqlite".
	Dialect string
	// ArrayParams is true when id lists are bound as one array parameter
	// (PostgreSQL = ANY($n)) instead of expanded placeholders.
	ArrayParams bool
	// IndexNames maps each index to the dialect's own name of it.
	IndexNames map[Index]string
	// Capabilities are the dialect's ways of keeping the lock order where
	// databases differ; they decide which optional statements it declares.
	Capabilities Capabilities
}

// Catalog is the complete, immutable set of statements of one dialect.
type Catalog struct {
	spec  Spec
	stmts map[Name]Statement
	order []Name
}

// New builds a catalogue and checks that every statement is well formed,
// that every required statement is declared, and that the capabilities
// agree with the statements, so a malformed or incomplete declaration fails
// at start-up, not at the first claim.
func New(spec Spec, stmts ...Statement) (*Catalog, error) {
	spec.IndexNames = maps.Clone(spec.IndexNames) // the declaration's map stays the declaration's
	dialect, arrayParams := spec.Dialect, spec.ArrayParams
	c := &Catalog{spec: spec, stmts: map[Name]Statement{}}
	for _, s := range stmts {
		if s.Name == "" || s.SQL == "" {
			return nil, fmt.Errorf("catalog %s: statement without name or SQL", dialect)
		}
		if _, dup := c.stmts[s.Name]; dup {
			return nil, fmt.Errorf("catalog %s: statement %q declared twice", dialect, s.Name)
		}
		if s.IDList && !arrayParams && !strings.Contains(s.SQL, "{ids}") {
			return nil, fmt.Errorf("catalog %s: %s: IDList statement lacks the {ids} marker", dialect, s.Name)
		}
		if s.KeyList && !arrayParams && !strings.Contains(s.SQL, "{keys}") {
			return nil, fmt.Errorf("catalog %s: %s: KeyList statement lacks the {keys} marker", dialect, s.Name)
		}
		if s.Returning && !strings.Contains(s.SQL, "RETURNING") {
			return nil, fmt.Errorf("catalog %s: %s: Returning statement has no RETURNING clause", dialect, s.Name)
		}
		if s.Rows && (s.RowSQL == "" || !strings.Contains(s.SQL, "{rows}")) {
			return nil, fmt.Errorf("catalog %s: %s: Rows statement needs RowSQL and a {rows} marker", dialect, s.Name)
		}
		for _, ix := range append([]Index{s.Finds}, s.Changes...) {
			if ix == None {
				continue
			}
			if _, ok := spec.IndexNames[ix]; !ok {
				return nil, fmt.Errorf("catalog %s: %s: index %q has no name in this dialect", dialect, s.Name, ix)
			}
		}
		c.stmts[s.Name] = s
		c.order = append(c.order, s.Name)
	}
	if err := checkNames(dialect, spec.Capabilities, c.stmts); err != nil {
		return nil, err
	}
	return c, nil
}

// Must returns c, and panics on err. It is for the offline catalogues a
// dialect exports for documentation and audits, built from declarations in
// the source with no error to return; the drivers themselves refuse to open
// on a catalogue New refuses, and the catalogue tests build every dialect's.
func Must(c *Catalog, err error) *Catalog {
	if err != nil {
		panic(err)
	}
	return c
}

// Dialect is the dialect the catalogue is written for.
func (c *Catalog) Dialect() string { return c.spec.Dialect }

// ArrayParams reports whether id lists bind as a single array parameter.
func (c *Catalog) ArrayParams() bool { return c.spec.ArrayParams }

// Capabilities are the dialect's declared ways of keeping the lock order.
func (c *Catalog) Capabilities() Capabilities { return c.spec.Capabilities }

// Spec returns what the dialect declared besides its statements, so that a
// catalogue of the same dialect can be built from other statements.
func (c *Catalog) Spec() Spec {
	spec := c.spec
	spec.IndexNames = maps.Clone(c.spec.IndexNames)
	return spec
}

// IndexName is the dialect's own name of an index.
func (c *Catalog) IndexName(ix Index) string { return c.spec.IndexNames[ix] }

// Lookup returns a statement by a name that arrives as text: a command
// line flag, a statement trace.
func (c *Catalog) Lookup(name string) (Statement, bool) {
	s, ok := c.stmts[Name(name)]
	return s, ok
}

// Get returns a statement that the caller knows the dialect declares: a
// required one, or one that a capability the dialect declares brings. New
// refuses a catalogue without those, so only a programming error can
// panic here.
func (c *Catalog) Get(name Name) Statement {
	s, ok := c.stmts[name]
	if !ok {
		panic(fmt.Sprintf("catalog %s: no statement %q", c.spec.Dialect, name))
	}
	return s
}

// All returns every statement in declaration order.
func (c *Catalog) All() []Statement {
	out := make([]Statement, 0, len(c.order))
	for _, n := range c.order {
		out = append(out, c.stmts[n])
	}
	return out
}

// Names returns the statement names, sorted.
func (c *Catalog) Names() []string {
	out := make([]string, 0, len(c.order))
	for _, n := range c.order {
		out = append(out, string(n))
	}
	sort.Strings(out)
	return out
}

// BindIDs renders an IDList statement for the given ids, which must already
// be sorted ascending, and appends them to args in the dialect's way.
func (c *Catalog) BindIDs(s Statement, ids []int64, args ...any) (string, []any) {
	if c.spec.ArrayParams {
		return s.SQL, append(args, ids)
	}
	sqlText := strings.Replace(s.SQL, "{ids}", placeholders(len(ids), "?"), 1)
	for _, id := range ids {
		args = append(args, id)
	}
	return sqlText, args
}

// BindKeys binds a KeyList statement's keys after args.
func (c *Catalog) BindKeys(s Statement, keys []string, args ...any) (string, []any) {
	if c.spec.ArrayParams {
		return s.SQL, append(args, keys)
	}
	sqlText := strings.Replace(s.SQL, "{keys}", placeholders(len(keys), "?"), 1)
	for _, k := range keys {
		args = append(args, k)
	}
	return sqlText, args
}

// BindRows renders a Rows statement for n rows.
func (c *Catalog) BindRows(s Statement, n int) string {
	return strings.Replace(s.SQL, "{rows}", placeholders(n, s.RowSQL), 1)
}

func placeholders(n int, one string) string {
	if n <= 0 {
		// An empty IN () is a syntax error; NULL matches no id.
		if one == "?" {
			return "NULL"
		}
		return ""
	}
	var b strings.Builder
	b.Grow(n * (len(one) + 1))
	for i := 0; i < n; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(one)
	}
	return b.String()
}

// With returns a copy of the catalogue in which each given statement
// replaces the one of the same name. It exists so that a guard can be shown
// failing on a deliberately broken declaration (a hint removed, say); the
// queue itself never runs a modified catalogue.
func (c *Catalog) With(stmts ...Statement) (*Catalog, error) {
	all := c.All()
	for _, s := range stmts {
		found := false
		for i := range all {
			if all[i].Name == s.Name {
				all[i], found = s, true
			}
		}
		if !found {
			return nil, fmt.Errorf("catalog %s: no statement %q to replace", c.spec.Dialect, s.Name)
		}
	}
	return New(c.spec, all...)
}

// LockClass says in words what a statement locks and in which order, as
// its declaration implies; the lock-order documentation is generated from
// it, so the words cannot drift from the declarations.
func (c *Catalog) LockClass(s Statement) string {
	switch {
	case s.Table == "":
		return "reads no table"
	case s.Table == "lockstep_migrations":
		return "schema bookkeeping, issued by migrate only, never by the running queue"
	case s.Name == RunCertify:
		return "Galera only: the run row `run.lock` holds, written (no new lock) so that certification sees the lock"
	case s.Name == QueueCertify:
		return "Galera only: the queue-settings row `queue.lock_limits` holds, written (no new lock) so that certification sees the lock"
	case s.Name == LimitCertifyKeys:
		return "Galera only: the limit-key rows `limit.lock_keys` or `limit.lock_key` holds, in ascending key order, written (no new lock) so that certification sees the locks"
	case s.Claim:
		return "locking read, SKIP LOCKED: claim-index entries and their primary-key rows in index order, stopping at LIMIT"
	case s.Table == "lockstep_queues" && s.Locks && strings.HasPrefix(s.SQL, "DELETE"):
		return "one queue-settings row by primary key (a delete), in a transaction of its own"
	case s.Table == "lockstep_queues" && s.Locks && strings.Contains(s.SQL, "FOR UPDATE"):
		return "one queue-settings row by primary key, exclusive (a locking read), before any job row"
	case s.Table == "lockstep_queues" && s.Locks:
		return "one queue-settings row by primary key (an upsert), in a transaction of its own"
	case s.Table == "lockstep_processes" && s.Locks:
		return "one process row by primary key, in a transaction of its own, never with a job row"
	case s.Table == "lockstep_history" && s.Locks && strings.HasPrefix(s.SQL, "DELETE"):
		return "history rows by a primary-key range (the oldest minutes), in a statement of its own"
	case s.Table == "lockstep_history" && s.Locks:
		return "one history row by primary key (an upsert); a flush writes its rows in ascending key order in a transaction of its own"
	case !s.Locks && strings.HasPrefix(s.SQL, "INSERT"):
		return "insert: new rows only"
	case !s.Locks:
		return "no row locks (consistent read)"
	case s.Table == "lockstep_job_deps":
		return "workflow edges of the given jobs, by the primary key's leading column, after those jobs' rows"
	case s.Finds == LimitKeysPrimary && s.KeyList:
		return "limit-key rows by primary key (queue, key) in ascending key order, SKIP LOCKED: a claim never waits for a key"
	case s.Finds == LimitKeysPrimary:
		return "one limit-key row by primary key (queue, key), exclusive, waited for holding no job row"
	case s.Finds == LimitStartsPrimary:
		return "the rate starts of the given keys older than the window, by the primary key's (queue, key, started_at) range, after the key rows"
	case s.Finds == RunsPrimary && strings.Contains(s.SQL, "SHARE"):
		return "one run row by primary key, shared"
	case s.Finds == RunsPrimary:
		return "one run row by primary key, exclusive"
	case s.IDList && len(s.Changes) == 0:
		return "job rows by primary key in ascending id order (a locking read that fixes the order)"
	case s.IDList:
		return "job rows by primary key in ascending id order, then their entries in the changed indexes"
	case len(s.Changes) == 0:
		return "one job row by primary key (no indexed column changes)"
	default:
		return "one job row by primary key, then its entries in the changed indexes"
	}
}

// Markdown renders the catalogue as a table: name, the index that finds
// rows, the indexes changed, and the lock class.
func (c *Catalog) Markdown() string { return c.MarkdownOf(nil) }

// MarkdownOf is Markdown of the statements keep accepts (all when keep is
// nil): a variant's page lists what it adds to its dialect's.
func (c *Catalog) MarkdownOf(keep func(Statement) bool) string {
	var b strings.Builder
	b.WriteString("| statement | finds rows through | changes | locks |\n|---|---|---|---|\n")
	for _, s := range c.All() {
		if keep != nil && !keep(s) {
			continue
		}
		finds := c.IndexName(s.Finds)
		if s.Finds == None {
			finds = "–"
		}
		var changes []string
		for _, ix := range s.Changes {
			changes = append(changes, c.IndexName(ix))
		}
		ch := strings.Join(changes, ", ")
		if ch == "" {
			ch = "–"
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s |\n", s.Name, finds, ch, c.LockClass(s))
	}
	return b.String()
}
