-- Unique jobs. unique_key is the job's key for its whole life; unique_states
-- is the set of statuses in which the key is held, one bit per status
-- (PENDING 1, RUNNING 2, DONE 4, FAILED 8, CANCELLED 16). MySQL and MariaDB
-- have no partial index, so unique_active is a stored generated column:
-- the key while the job's status is in its set, NULL otherwise, and the
-- unique index holds only the non-NULL ones. No statement writes it: every
-- status change recomputes it, inside the row write that already holds the
-- row's PRIMARY lock, so the index changes after PRIMARY like the others.
-- (VARCHAR, not CHAR: MariaDB refuses a CHAR column in a stored generated
-- column's expression, which would depend on PAD_CHAR_TO_FULL_LENGTH.)
-- DESC puts the NULLs of jobs that hold no key after every key, and new
-- ones at the very end: a transaction that met a duplicate keeps a shared
-- next-key lock on the holder's record and the gap before it until it ends,
-- and in ascending order the gap before the smallest key is where every new
-- NULL goes, so every plain enqueue would wait for that transaction.
-- (MariaDB honours DESC from 10.8, MySQL from 8.0; 10.6 and 10.7 build the
-- index ascending.)
-- The cost is one more index entry to delete when a job leaves its unique
-- statuses (and to insert if a retry brings it back).
ALTER TABLE lockstep_jobs
  ADD COLUMN unique_key    VARCHAR(64) CHARACTER SET ascii COLLATE ascii_bin NULL,
  ADD COLUMN unique_states SMALLINT NOT NULL DEFAULT 0,
  ADD COLUMN unique_active VARCHAR(64) CHARACTER SET ascii COLLATE ascii_bin
    AS (CASE WHEN (unique_states & (CASE status WHEN 'PENDING' THEN 1 WHEN 'RUNNING' THEN 2 WHEN 'DONE' THEN 4 WHEN 'FAILED' THEN 8 WHEN 'CANCELLED' THEN 16 ELSE 0 END)) <> 0 THEN unique_key END) STORED,
  ADD COLUMN metadata      LONGTEXT NULL,
  ADD COLUMN output        LONGTEXT NULL,
  ADD UNIQUE KEY lockstep_jobs_unique (unique_active DESC);

-- A queue's settings, shared by every process: paused (paused_at set) and
-- a runtime cap on each process's workers (max_workers). A queue with no
-- row runs as configured. Only this table's own statements lock its rows,
-- one row by primary key each, never together with a job row.
CREATE TABLE lockstep_queues (
  name        VARCHAR(128) NOT NULL,
  paused_at   DATETIME(6)  NULL,
  max_workers INT          NULL,
  updated_at  DATETIME(6)  NOT NULL,
  PRIMARY KEY (name)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
