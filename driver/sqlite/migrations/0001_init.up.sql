-- Times are TEXT in one fixed-width UTC format ('YYYY-MM-DD HH:MM:SS.SSS',
-- what strftime('%Y-%m-%d %H:%M:%f') makes), so comparing text compares time.
CREATE TABLE lockstep_runs (
  id           INTEGER PRIMARY KEY AUTOINCREMENT,
  name         TEXT NOT NULL,
  status       TEXT NOT NULL DEFAULT 'ACTIVE' CHECK (status IN ('ACTIVE', 'CANCELLED')),
  metadata     TEXT,
  created_at   TEXT NOT NULL DEFAULT (strftime('%Y-%m-%d %H:%M:%f', 'now')),
  cancelled_at TEXT
);

-- AUTOINCREMENT: a deleted job's id is never reused, so a stale worker's
-- (id, attempt) fence can never match a different job.
CREATE TABLE lockstep_jobs (
  id            INTEGER PRIMARY KEY AUTOINCREMENT,
  run_id        INTEGER,
  queue         TEXT    NOT NULL,
  kind          TEXT    NOT NULL,
  args          TEXT    NOT NULL,
  status        TEXT    NOT NULL CHECK (status IN ('PENDING', 'RUNNING', 'DONE', 'FAILED', 'CANCELLED')),
  priority      INTEGER NOT NULL DEFAULT 0,
  available_at  TEXT    NOT NULL,
  attempts      INTEGER NOT NULL DEFAULT 0,
  max_attempts  INTEGER NOT NULL,
  started_at    TEXT,
  heartbeat_at  TEXT,
  finished_at   TEXT,
  last_error    TEXT,
  error_history TEXT    NOT NULL DEFAULT '[]',
  created_at    TEXT    NOT NULL DEFAULT (strftime('%Y-%m-%d %H:%M:%f', 'now'))
);

CREATE INDEX lockstep_jobs_claim ON lockstep_jobs (queue, priority, available_at, id) WHERE status = 'PENDING';
CREATE INDEX lockstep_jobs_run ON lockstep_jobs (run_id, id) WHERE run_id IS NOT NULL;
CREATE INDEX lockstep_jobs_heartbeat ON lockstep_jobs (heartbeat_at, id) WHERE status = 'RUNNING';
