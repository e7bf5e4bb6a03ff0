-- A BLOCKED job cannot exist without this migration: it becomes PENDING.
DROP TABLE lockstep_limit_starts;
DROP TABLE lockstep_limit_keys;
ALTER TABLE lockstep_queues DROP COLUMN concurrency;
ALTER TABLE lockstep_queues DROP COLUMN key_concurrency;
ALTER TABLE lockstep_queues DROP COLUMN sequence;
ALTER TABLE lockstep_queues DROP COLUMN rate;
ALTER TABLE lockstep_queues DROP COLUMN rate_period_us;
ALTER TABLE lockstep_queues DROP COLUMN rate_by_key;
CREATE TABLE lockstep_jobs_new (
  id            INTEGER PRIMARY KEY AUTOINCREMENT,
  run_id        INTEGER,
  queue         TEXT    NOT NULL,
  kind          TEXT    NOT NULL,
  args          TEXT    NOT NULL,
  status        TEXT    NOT NULL CHECK (status IN ('WAITING', 'PENDING', 'RUNNING', 'DONE', 'FAILED', 'CANCELLED')),
  priority      INTEGER NOT NULL DEFAULT 0,
  available_at  TEXT    NOT NULL,
  attempts      INTEGER NOT NULL DEFAULT 0,
  max_attempts  INTEGER NOT NULL,
  started_at    TEXT,
  heartbeat_at  TEXT,
  finished_at   TEXT,
  last_error    TEXT,
  error_history TEXT    NOT NULL DEFAULT '[]',
  created_at    TEXT    NOT NULL DEFAULT (strftime('%Y-%m-%d %H:%M:%f', 'now')),
  unique_key    TEXT,
  unique_states INTEGER NOT NULL DEFAULT 0,
  metadata      TEXT,
  output        TEXT,
  waiting_on    INTEGER NOT NULL DEFAULT 0,
  dependents    INTEGER NOT NULL DEFAULT 0,
  dep_policy    INTEGER NOT NULL DEFAULT 0,
  callback      TEXT,
  blocked_by    INTEGER
);
INSERT INTO lockstep_jobs_new (id, run_id, queue, kind, args, status, priority, available_at, attempts, max_attempts, started_at, heartbeat_at, finished_at, last_error, error_history, created_at, unique_key, unique_states, metadata, output, waiting_on, dependents, dep_policy, callback, blocked_by) SELECT id, run_id, queue, kind, args, CASE status WHEN 'BLOCKED' THEN 'PENDING' ELSE status END, priority, available_at, attempts, max_attempts, started_at, heartbeat_at, finished_at, last_error, error_history, created_at, unique_key, unique_states, metadata, output, waiting_on, dependents, dep_policy, callback, blocked_by FROM lockstep_jobs;
-- AUTOINCREMENT's high-water mark moves with the table, so that no id of a
-- deleted job is ever handed out again.
DELETE FROM sqlite_sequence WHERE name = 'lockstep_jobs_new';
INSERT INTO sqlite_sequence (name, seq) SELECT 'lockstep_jobs_new', seq FROM sqlite_sequence WHERE name = 'lockstep_jobs';
DROP TABLE lockstep_jobs;
ALTER TABLE lockstep_jobs_new RENAME TO lockstep_jobs;
CREATE INDEX lockstep_jobs_claim ON lockstep_jobs (queue, priority, available_at, id) WHERE status = 'PENDING';
CREATE INDEX lockstep_jobs_run ON lockstep_jobs (run_id, id) WHERE run_id IS NOT NULL;
CREATE INDEX lockstep_jobs_heartbeat ON lockstep_jobs (heartbeat_at, id) WHERE status = 'RUNNING';
CREATE INDEX lockstep_jobs_queue_status ON lockstep_jobs (queue, status, heartbeat_at);
CREATE UNIQUE INDEX lockstep_jobs_unique ON lockstep_jobs (unique_key)
  WHERE unique_key IS NOT NULL
    AND (unique_states & (CASE status WHEN 'PENDING' THEN 1 WHEN 'RUNNING' THEN 2 WHEN 'DONE' THEN 4 WHEN 'FAILED' THEN 8 WHEN 'CANCELLED' THEN 16 ELSE 0 END)) <> 0;
