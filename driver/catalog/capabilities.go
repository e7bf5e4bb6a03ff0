package catalog

import "fmt"

// Capabilities are the choices a dialect makes where databases differ in how
// they keep the lock order. The shared executor reads these fields; it never
// infers a behaviour from which statements a catalogue happens to declare.
// New holds them against the statements: a capability comes with its
// statements, and a statement that only a capability needs comes with it.
type Capabilities struct {
	// OneStatementClaim: JobClaim locks the claimable rows (SKIP LOCKED),
	// moves them to RUNNING and returns them in one statement (UPDATE …
	// RETURNING). Without it the claim is two statements in one
	// transaction: JobClaimSelect, a locking read through the claim index,
	// then JobClaimUpdate by primary key (MySQL has no UPDATE … RETURNING).
	OneStatementClaim bool
	// LockIDsFirst: the database locks rows in the order its plan visits
	// them (a PostgreSQL bitmap scan visits them in physical order), so every
	// write of an id list is preceded by JobLockIDs, a locking read ORDER BY
	// id that fixes the order whatever the write's plan.
	LockIDsFirst bool
	// LockMany: JobLockMany locks job rows by primary key in ascending id
	// order before a batched DONE whose fences did not all match is written
	// again row by row — needed where that statement cannot return the ids
	// it changed (MySQL) and so is checked under lock instead.
	LockMany bool
	// Notify: the database can wake other processes' listeners. JobNotify
	// sends a wake-up inside the transaction that makes jobs available, so
	// it is delivered on commit only; JobListen subscribes.
	Notify bool
	// StatusIndex: an index led by status covers every status (MySQL's
	// lockstep_jobs_heartbeat; PostgreSQL's and SQLite's hold RUNNING jobs
	// only), so JobMatchCountStatus counts one status's matches by reading
	// that range alone. Without it the count reads windows of the primary
	// key.
	StatusIndex bool
	// TextIndex: the database has a text index a user may add to the
	// jobs' args and metadata (PostgreSQL's pg_trgm, InnoDB's FULLTEXT):
	// where it exists, a search that the newest window of ids does not
	// answer goes through it (JobSearch) instead of window after window.
	TextIndex bool
	// CertifyLocks: the database is a Galera cluster node, where a row
	// lock is the node's own and a transaction's conflicts with other
	// nodes are found at COMMIT by comparing the rows each wrote, never
	// the rows each merely locked. A lock that guards a decision without
	// a write of its row — the run row shared by an enqueue into the run
	// or a workflow step, a limited queue's row, a limit key — would hold
	// on one node only. With it every such lock is exclusive and followed
	// by a write of the locked row (RunCertify, QueueCertify,
	// LimitCertifyKeys), which takes no lock the read did not take and
	// puts the row in the write set: two nodes that lock the same row
	// conflict at certification, and one of them is retried whole.
	CertifyLocks bool
}

// bound is an optional statement and the capability it belongs to: a
// catalogue declares the statement exactly when the capability's value is
// with.
type bound struct {
	name  Name
	cap   string
	value bool
	with  bool
}

// optional lists the statements that only some dialects declare, each with
// the capability that decides it.
func (c Capabilities) optional() []bound {
	return []bound{
		{JobClaim, "OneStatementClaim", c.OneStatementClaim, true},
		{JobClaimSelect, "OneStatementClaim", c.OneStatementClaim, false},
		{JobClaimUpdate, "OneStatementClaim", c.OneStatementClaim, false},
		{JobClaimAfter, "OneStatementClaim", c.OneStatementClaim, true},
		{JobClaimSelectAfter, "OneStatementClaim", c.OneStatementClaim, false},
		{JobLockIDs, "LockIDsFirst", c.LockIDsFirst, true},
		{JobLockMany, "LockMany", c.LockMany, true},
		{JobNotify, "Notify", c.Notify, true},
		{JobListen, "Notify", c.Notify, true},
		{JobMatchCountStatus, "StatusIndex", c.StatusIndex, true},
		{TextIndexExists, "TextIndex", c.TextIndex, true},
		{JobSearch, "TextIndex", c.TextIndex, true},
		{RunCertify, "CertifyLocks", c.CertifyLocks, true},
		{QueueCertify, "CertifyLocks", c.CertifyLocks, true},
		{LimitCertifyKeys, "CertifyLocks", c.CertifyLocks, true},
	}
}

// check refuses capabilities that disagree with the declared statements,
// one problem per statement.
func (c Capabilities) check(declared map[Name]Statement) []string {
	var problems []string
	if c.LockIDsFirst && c.LockMany {
		// Both order the same locks the same way; with both, job.lock_many
		// would be declared and never run.
		problems = append(problems, "LockIDsFirst and LockMany are two ways to take the same locks: set one")
	}
	for _, b := range c.optional() {
		_, has := declared[b.name]
		switch want := b.value == b.with; {
		case want && !has && b.with:
			problems = append(problems, fmt.Sprintf("capability %s without its statement %s", b.cap, b.name))
		case want && !has:
			problems = append(problems, fmt.Sprintf("without capability %s, statement %s is required", b.cap, b.name))
		case !want && has && b.with:
			problems = append(problems, fmt.Sprintf("statement %s declared without its capability %s", b.name, b.cap))
		case !want && has:
			problems = append(problems, fmt.Sprintf("statement %s declared, but capability %s replaces it", b.name, b.cap))
		}
	}
	return problems
}
