UPDATE lockstep_jobs SET status = 'PENDING' WHERE status = 'BLOCKED';
DROP TABLE lockstep_limit_starts;
DROP TABLE lockstep_limit_keys;
ALTER TABLE lockstep_queues
  DROP COLUMN concurrency,
  DROP COLUMN key_concurrency,
  DROP COLUMN sequence,
  DROP COLUMN rate,
  DROP COLUMN rate_period_us,
  DROP COLUMN rate_by_key;
DROP INDEX lockstep_jobs_unique;
CREATE UNIQUE INDEX lockstep_jobs_unique ON lockstep_jobs (unique_key)
  WHERE unique_key IS NOT NULL
    AND (unique_states & (CASE status WHEN 'PENDING' THEN 1 WHEN 'RUNNING' THEN 2 WHEN 'DONE' THEN 4 WHEN 'FAILED' THEN 8 WHEN 'CANCELLED' THEN 16 ELSE 0 END)) <> 0;
DROP INDEX lockstep_jobs_limit;
ALTER TABLE lockstep_jobs DROP COLUMN limit_key;
ALTER TABLE lockstep_jobs DROP CONSTRAINT lockstep_jobs_status_check;
ALTER TABLE lockstep_jobs ADD CONSTRAINT lockstep_jobs_status_check
  CHECK (status IN ('WAITING', 'PENDING', 'RUNNING', 'DONE', 'FAILED', 'CANCELLED'));
