DROP TABLE lockstep_jobs;
DROP TABLE lockstep_runs;
