-- Concurrency limits, sequences and rate limits: see the MySQL migration of
-- the same name. BLOCKED joins the statuses (the claim index's predicate is
-- status = 'PENDING', so it holds no BLOCKED job) and holds a unique key as
-- PENDING does. lockstep_jobs_limit indexes only the jobs that have a key.
ALTER TABLE lockstep_jobs DROP CONSTRAINT lockstep_jobs_status_check;
ALTER TABLE lockstep_jobs ADD CONSTRAINT lockstep_jobs_status_check
  CHECK (status IN ('WAITING', 'PENDING', 'BLOCKED', 'RUNNING', 'DONE', 'FAILED', 'CANCELLED'));
ALTER TABLE lockstep_jobs ADD COLUMN limit_key text;
CREATE INDEX lockstep_jobs_limit ON lockstep_jobs (queue, limit_key, status, id) WHERE limit_key IS NOT NULL;
DROP INDEX lockstep_jobs_unique;
CREATE UNIQUE INDEX lockstep_jobs_unique ON lockstep_jobs (unique_key)
  WHERE unique_key IS NOT NULL
    AND (unique_states & (CASE status WHEN 'PENDING' THEN 1 WHEN 'BLOCKED' THEN 1 WHEN 'RUNNING' THEN 2 WHEN 'DONE' THEN 4 WHEN 'FAILED' THEN 8 WHEN 'CANCELLED' THEN 16 ELSE 0 END)) <> 0;
ALTER TABLE lockstep_queues
  ADD COLUMN concurrency     integer,
  ADD COLUMN key_concurrency integer,
  ADD COLUMN sequence        smallint NOT NULL DEFAULT 0,
  ADD COLUMN rate            integer,
  ADD COLUMN rate_period_us  bigint,
  ADD COLUMN rate_by_key     smallint NOT NULL DEFAULT 0;
CREATE TABLE lockstep_limit_keys (
  queue      text        NOT NULL,
  limit_key  text        NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (queue, limit_key)
);
CREATE TABLE lockstep_limit_starts (
  queue      text        NOT NULL,
  limit_key  text        NOT NULL,
  started_at timestamptz NOT NULL,
  job_id     bigint      NOT NULL,
  PRIMARY KEY (queue, limit_key, started_at, job_id)
);
