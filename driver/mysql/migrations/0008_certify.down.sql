ALTER TABLE lockstep_limit_keys DROP COLUMN lock_seq;
ALTER TABLE lockstep_queues DROP COLUMN lock_seq;
ALTER TABLE lockstep_runs DROP COLUMN lock_seq;
