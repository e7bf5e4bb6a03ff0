DROP TABLE lockstep_queues;
DROP INDEX lockstep_jobs_unique;
ALTER TABLE lockstep_jobs DROP COLUMN unique_key, DROP COLUMN unique_states, DROP COLUMN metadata, DROP COLUMN output;
