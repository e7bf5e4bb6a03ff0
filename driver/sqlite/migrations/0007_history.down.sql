DROP TABLE lockstep_history;
