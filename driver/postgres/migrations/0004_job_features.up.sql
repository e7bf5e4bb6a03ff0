-- Unique jobs. unique_key is the job's key for its whole life; unique_states
-- is the set of statuses in which the key is held, one bit per status
-- (PENDING 1, RUNNING 2, DONE 4, FAILED 8, CANCELLED 16). The partial
-- unique index holds a job's key only while its status is in its set: a
-- status change that leaves the set drops the entry, one that enters it
-- adds the entry (and fails with 23505 if another job holds the key).
-- No by-id statement's WHERE implies this predicate, so the planner cannot
-- find a job to lock through it.
ALTER TABLE lockstep_jobs
  ADD COLUMN unique_key    text,
  ADD COLUMN unique_states smallint NOT NULL DEFAULT 0,
  ADD COLUMN metadata      jsonb,
  ADD COLUMN output        jsonb;

CREATE UNIQUE INDEX lockstep_jobs_unique ON lockstep_jobs (unique_key)
  WHERE unique_key IS NOT NULL
    AND (unique_states & (CASE status WHEN 'PENDING' THEN 1 WHEN 'RUNNING' THEN 2 WHEN 'DONE' THEN 4 WHEN 'FAILED' THEN 8 WHEN 'CANCELLED' THEN 16 ELSE 0 END)) <> 0;

-- A queue's settings, shared by every process: paused (paused_at set) and
-- a runtime cap on each process's workers (max_workers). A queue with no
-- row runs as configured.
CREATE TABLE lockstep_queues (
  name        text        PRIMARY KEY,
  paused_at   timestamptz,
  max_workers integer,
  updated_at  timestamptz NOT NULL
);
