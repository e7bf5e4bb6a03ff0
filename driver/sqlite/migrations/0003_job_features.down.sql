DROP TABLE lockstep_queues;
DROP INDEX lockstep_jobs_unique;
ALTER TABLE lockstep_jobs DROP COLUMN unique_key;
ALTER TABLE lockstep_jobs DROP COLUMN unique_states;
ALTER TABLE lockstep_jobs DROP COLUMN metadata;
ALTER TABLE lockstep_jobs DROP COLUMN output;
