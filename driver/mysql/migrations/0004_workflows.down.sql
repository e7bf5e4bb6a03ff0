-- A WAITING job cannot exist without this migration: it becomes CANCELLED.
UPDATE lockstep_jobs SET status = 'CANCELLED' WHERE status = 'WAITING';
DROP TABLE lockstep_job_deps;
ALTER TABLE lockstep_runs DROP COLUMN callbacks;
ALTER TABLE lockstep_jobs
  DROP COLUMN waiting_on,
  DROP COLUMN dependents,
  DROP COLUMN dep_policy,
  DROP COLUMN callback,
  DROP COLUMN blocked_by;
