-- Workflows and run callbacks: see the MySQL migration of the same name.
-- WAITING joins the statuses; the claim index's predicate is status =
-- 'PENDING', so it holds no WAITING job.
ALTER TABLE lockstep_jobs DROP CONSTRAINT lockstep_jobs_status_check;
ALTER TABLE lockstep_jobs ADD CONSTRAINT lockstep_jobs_status_check
  CHECK (status IN ('WAITING', 'PENDING', 'RUNNING', 'DONE', 'FAILED', 'CANCELLED'));
ALTER TABLE lockstep_jobs
  ADD COLUMN waiting_on integer  NOT NULL DEFAULT 0,
  ADD COLUMN dependents integer  NOT NULL DEFAULT 0,
  ADD COLUMN dep_policy smallint NOT NULL DEFAULT 0,
  ADD COLUMN callback   text,
  ADD COLUMN blocked_by bigint;
ALTER TABLE lockstep_runs ADD COLUMN callbacks smallint NOT NULL DEFAULT 0;
CREATE TABLE lockstep_job_deps (
  job_id     bigint NOT NULL,
  depends_on bigint NOT NULL,
  PRIMARY KEY (job_id, depends_on)
);
CREATE INDEX lockstep_job_deps_up ON lockstep_job_deps (depends_on, job_id);
