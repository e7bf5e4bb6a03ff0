-- lock_seq: on a Galera cluster a row lock is the node's own, and another
-- node learns of a transaction only through the rows it wrote (its write
-- set, compared at COMMIT: certification). Where the queue takes a lock to
-- guard a decision without writing the locked row — a run held while jobs
-- join it or a workflow moves on, a limited queue's row, a limit key — it
-- then adds one to the row's lock_seq (run.certify, queue.certify,
-- limit.certify_keys), so that two nodes that lock the same row conflict at
-- certification and one of them is retried whole. Only a Galera node writes
-- it; the value means nothing else. Adding a column with a default is
-- instant on MariaDB 10.3+ and MySQL 8.0.12+: no table copy.
ALTER TABLE lockstep_runs ADD COLUMN lock_seq BIGINT NOT NULL DEFAULT 0;
ALTER TABLE lockstep_queues ADD COLUMN lock_seq BIGINT NOT NULL DEFAULT 0;
ALTER TABLE lockstep_limit_keys ADD COLUMN lock_seq BIGINT NOT NULL DEFAULT 0;
