package mysql

import "github.com/lockstep-queue/lockstep/driver/catalog"

// historyPrune deletes the oldest minutes by a range of the primary key's
// leading column: the table has no other index to choose (and a
// single-table DELETE takes no hint).
const historyPrune = "DELETE FROM lockstep_history WHERE bucket < ?"

// historyStatements are the history rollup's (sqlexec/history.go). The
// flush's upsert binds its counts twice, once for a new row and once to add
// to an existing one: neither VALUES() (deprecated by MySQL 8.0.20) nor a
// row alias (MySQL 8.0.19 and later only, and not MariaDB's syntax), so one
// text serves every server the driver takes.

func historyStatements() []catalog.Statement {
	const hist = "lockstep_history"
	return []catalog.Statement{
		{
			// One row of a flush, by its whole primary key; the flush
			// writes its rows in key order in a transaction of its own.
			// (Finds no rows to write: an upsert, as queue.pause.)
			Name: catalog.HistoryAdd, Table: hist, Locks: true,
			SQL: "INSERT INTO lockstep_history (bucket, queue, kind, done, failed, retried, cancelled, run_ms) VALUES (?, ?, ?, ?, ?, ?, ?, ?)" +
				" ON DUPLICATE KEY UPDATE done = done + ?, failed = failed + ?, retried = retried + ?, cancelled = cancelled + ?, run_ms = run_ms + ?",
		},
		{
			Name: catalog.HistoryRange, Table: hist, Finds: catalog.HistoryPrimary,
			SQL: "SELECT bucket, queue, kind, done, failed, retried, cancelled, run_ms FROM lockstep_history FORCE INDEX (PRIMARY)" +
				" WHERE bucket >= ? AND bucket < ? AND (? = '' OR queue = ?) AND (? = '' OR kind = ?) ORDER BY bucket, queue, kind",
		},
		{
			Name: catalog.HistoryPruneBound, Table: hist, Finds: catalog.HistoryPrimary,
			SQL: "SELECT bucket FROM lockstep_history FORCE INDEX (PRIMARY) WHERE bucket < ? ORDER BY bucket, queue, kind LIMIT 1 OFFSET ?",
		},
		{
			// The oldest rows, by the primary key's leading column: a
			// range that ends where the bound was found.
			Name: catalog.HistoryPrune, Table: hist, Finds: catalog.HistoryPrimary, Locks: true,
			SQL: historyPrune,
		},
	}
}
