-- The heartbeat index serves the reaper only. Its old predicate, status =
-- 'RUNNING', is implied by every by-id write's own "AND status = 'RUNNING'",
-- so the planner could find a finish's rows by reading this whole partial
-- index instead of probing the primary key: cheap on paper while few jobs
-- run, slow in practice once the index holds the dead entries of jobs that
-- finished since the last vacuum (a batched finish took 20-30 ms). With
-- "heartbeat_at IS NOT NULL" added, only statements that bound heartbeat_at
-- (the reaper's "heartbeat_at < …") can use it; every RUNNING job has a
-- heartbeat, so it indexes the same rows.
DROP INDEX lockstep_jobs_heartbeat;
CREATE INDEX lockstep_jobs_heartbeat ON lockstep_jobs (heartbeat_at, id) WHERE status = 'RUNNING' AND heartbeat_at IS NOT NULL;
