DROP INDEX lockstep_jobs_heartbeat;
CREATE INDEX lockstep_jobs_heartbeat ON lockstep_jobs (heartbeat_at, id) WHERE status = 'RUNNING';
