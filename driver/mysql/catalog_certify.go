package mysql

import "github.com/lockstep-queue/lockstep/driver/catalog"

// certifyStatements are a Galera node's writes of rows the queue has just
// locked (catalog.Capabilities.CertifyLocks): each adds one to the row's
// lock_seq, a column nothing reads, by primary key, after the locking read
// that took the row's exclusive lock, so it waits for nothing and locks
// nothing new. MySQL would skip a write that changes nothing, and a row
// that is not changed is not in the write set: hence a counter.
func certifyStatements() []catalog.Statement {
	return []catalog.Statement{
		{
			Name: catalog.RunCertify, Table: "lockstep_runs", Finds: catalog.RunsPrimary, Locks: true,
			SQL: "UPDATE lockstep_runs FORCE INDEX (PRIMARY) SET lock_seq = lock_seq + 1 WHERE id = ?",
		},
		{
			Name: catalog.QueueCertify, Table: "lockstep_queues", Finds: catalog.QueuesPrimary, Locks: true,
			SQL: "UPDATE lockstep_queues FORCE INDEX (PRIMARY) SET lock_seq = lock_seq + 1 WHERE name = ?",
		},
		{
			Name: catalog.LimitCertifyKeys, Table: "lockstep_limit_keys", Finds: catalog.LimitKeysPrimary, Locks: true, KeyList: true,
			SQL: "UPDATE lockstep_limit_keys FORCE INDEX (PRIMARY) SET lock_seq = lock_seq + 1 WHERE queue = ? AND limit_key IN ({keys})",
		},
	}
}
