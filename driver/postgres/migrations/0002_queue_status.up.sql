-- lockstep_jobs_queue_status serves the bounded counts of the stats, the CLI
-- and the dashboard: (queue, status) counts each status of a queue as one
-- index range, and heartbeat_at — the last heartbeat while a job RUNS, the
-- time it left RUNNING (or was cancelled or retried) otherwise — counts the
-- jobs a queue finished within a window. Every statement that changes a
-- job's status or heartbeat finds the job by the primary key first, so this index
-- adds entries to change, never a new way to find (and lock) rows.
CREATE INDEX lockstep_jobs_queue_status ON lockstep_jobs (queue, status, heartbeat_at);
