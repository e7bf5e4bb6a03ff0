DROP INDEX lockstep_jobs_queue_status ON lockstep_jobs;
