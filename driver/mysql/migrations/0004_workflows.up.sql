-- Workflows and run callbacks. A job that depends on others is WAITING
-- until they are done: the claim index's range is (queue, 'PENDING', …), so
-- a WAITING job is never scanned by a claim. waiting_on counts the
-- dependencies not yet satisfied; dependents counts the jobs (callbacks
-- included) that depend on this one, so a finishing worker knows, from the
-- row it claimed, whether its result must be written together with its
-- dependents'. dep_policy is what a failed or cancelled dependency does to
-- this job (0: cancel it, 1: run it anyway, 2: fire it — a run's failure
-- callback). callback is the condition a run's callback job fires on.
-- blocked_by is the dependency whose failure cancelled this job, so that
-- retrying that dependency brings it back.
ALTER TABLE lockstep_jobs
  ADD COLUMN waiting_on INT         NOT NULL DEFAULT 0,
  ADD COLUMN dependents INT         NOT NULL DEFAULT 0,
  ADD COLUMN dep_policy SMALLINT    NOT NULL DEFAULT 0,
  ADD COLUMN callback   VARCHAR(16) NULL,
  ADD COLUMN blocked_by BIGINT      NULL;

-- callbacks is set when the run has callback jobs: such a run takes no
-- jobs after it is created (the callbacks count its jobs at creation).
ALTER TABLE lockstep_runs ADD COLUMN callbacks SMALLINT NOT NULL DEFAULT 0;

-- The edges of a workflow, written once with its jobs and never updated:
-- job_id depends on depends_on. They are read without locks (the
-- dependents of a finishing job through lockstep_job_deps_up, the
-- dependencies of a job through the primary key); the rows they name are
-- then locked by the jobs table's primary key in ascending id order.
CREATE TABLE lockstep_job_deps (
  job_id     BIGINT NOT NULL,
  depends_on BIGINT NOT NULL,
  PRIMARY KEY (job_id, depends_on),
  KEY lockstep_job_deps_up (depends_on, job_id)
) ENGINE=InnoDB;
