-- The processes that run workers: each client inserts its row at start
-- (id: host-pid-random, made by the client), refreshes heartbeat_at on its
-- heartbeat cadence — one row by primary key, alone in its transaction —
-- and deletes it at a clean stop. A process whose heartbeat is older than
-- the reap limit is dead; rows far older than that are pruned by the
-- maintenance loop. The table is small: one row per running process.
CREATE TABLE lockstep_processes (
  id           VARCHAR(255) NOT NULL,
  host         VARCHAR(255) NOT NULL,
  pid          BIGINT       NOT NULL,
  version      VARCHAR(255) NOT NULL,
  queues       TEXT         NOT NULL,
  workers      INT          NOT NULL,
  started_at   DATETIME(6)  NOT NULL,
  heartbeat_at DATETIME(6)  NOT NULL,
  PRIMARY KEY (id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

-- The process that claimed a job's current attempt (NULL: claimed by no
-- registered process, or never claimed). Written by the claim only, in the
-- SET list of its update; no index: a dead process's RUNNING jobs are
-- read through lockstep_jobs_heartbeat's RUNNING range with a filter.
-- A nullable column at the end: an instant change on MySQL 8 and MariaDB.
ALTER TABLE lockstep_jobs ADD COLUMN claimed_by VARCHAR(255) NULL;
