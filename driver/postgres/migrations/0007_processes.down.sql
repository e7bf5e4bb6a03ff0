ALTER TABLE lockstep_jobs DROP COLUMN claimed_by;
DROP TABLE lockstep_processes;
