-- A BLOCKED job cannot exist without this migration: it becomes PENDING.
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
ALTER TABLE lockstep_jobs
  DROP KEY lockstep_jobs_limit,
  DROP COLUMN limit_key,
  MODIFY COLUMN unique_active VARCHAR(64) CHARACTER SET ascii COLLATE ascii_bin
    AS (CASE WHEN (unique_states & (CASE status WHEN 'PENDING' THEN 1 WHEN 'RUNNING' THEN 2 WHEN 'DONE' THEN 4 WHEN 'FAILED' THEN 8 WHEN 'CANCELLED' THEN 16 ELSE 0 END)) <> 0 THEN unique_key END) STORED;
