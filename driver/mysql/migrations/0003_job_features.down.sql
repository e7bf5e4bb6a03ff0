DROP TABLE lockstep_queues;
ALTER TABLE lockstep_jobs
  DROP INDEX lockstep_jobs_unique,
  DROP COLUMN unique_active,
  DROP COLUMN unique_key,
  DROP COLUMN unique_states,
  DROP COLUMN metadata,
  DROP COLUMN output;
