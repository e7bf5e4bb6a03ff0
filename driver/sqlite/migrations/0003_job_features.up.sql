-- Unique jobs: see the PostgreSQL migration. A partial unique index holds a
-- job's key only while its status is in its set.
ALTER TABLE lockstep_jobs ADD COLUMN unique_key TEXT;
ALTER TABLE lockstep_jobs ADD COLUMN unique_states INTEGER NOT NULL DEFAULT 0;
ALTER TABLE lockstep_jobs ADD COLUMN metadata TEXT;
ALTER TABLE lockstep_jobs ADD COLUMN output TEXT;
CREATE UNIQUE INDEX lockstep_jobs_unique ON lockstep_jobs (unique_key)
  WHERE unique_key IS NOT NULL
    AND (unique_states & (CASE status WHEN 'PENDING' THEN 1 WHEN 'RUNNING' THEN 2 WHEN 'DONE' THEN 4 WHEN 'FAILED' THEN 8 WHEN 'CANCELLED' THEN 16 ELSE 0 END)) <> 0;

CREATE TABLE lockstep_queues (
  name        TEXT PRIMARY KEY,
  paused_at   TEXT,
  max_workers INTEGER,
  updated_at  TEXT NOT NULL
);
