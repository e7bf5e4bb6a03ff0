package postgres

import "github.com/lockstep-queue/lockstep/driver/catalog"

// historyStatements are the history rollup's (sqlexec/history.go). The
// flush's upsert binds its counts twice, once for a new row and once to add
// to an existing one, as every dialect's does: the executor binds the same
// arguments everywhere.
func historyStatements() []catalog.Statement {
	const hist = "lockstep_history"
	return []catalog.Statement{
		{
			// One row of a flush, by its whole primary key; the flush
			// writes its rows in key order in a transaction of its own.
			// (Finds no rows to write: an upsert, as queue.pause.)
			Name: catalog.HistoryAdd, Table: hist, Locks: true,
			SQL: "INSERT INTO lockstep_history (bucket, queue, kind, done, failed, retried, cancelled, run_ms) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)" +
				" ON CONFLICT (bucket, queue, kind) DO UPDATE SET done = lockstep_history.done + $9, failed = lockstep_history.failed + $10," +
				" retried = lockstep_history.retried + $11, cancelled = lockstep_history.cancelled + $12, run_ms = lockstep_history.run_ms + $13",
		},
		{
			Name: catalog.HistoryRange, Table: hist, Finds: catalog.HistoryPrimary,
			SQL: "SELECT bucket, queue, kind, done, failed, retried, cancelled, run_ms FROM lockstep_history" +
				" WHERE bucket >= $1 AND bucket < $2 AND ($3 = '' OR queue = $4) AND ($5 = '' OR kind = $6) ORDER BY bucket, queue, kind",
		},
		{
			Name: catalog.HistoryPruneBound, Table: hist, Finds: catalog.HistoryPrimary,
			SQL: "SELECT bucket FROM lockstep_history WHERE bucket < $1 ORDER BY bucket, queue, kind LIMIT 1 OFFSET $2",
		},
		{
			// The oldest rows, by the primary key's leading column: a
			// range that ends where the bound was found.
			Name: catalog.HistoryPrune, Table: hist, Finds: catalog.HistoryPrimary, Locks: true,
			SQL: "DELETE FROM lockstep_history WHERE bucket < $1",
		},
	}
}
