-- The processes that run workers, and the process that claimed a job's
-- current attempt: see the MySQL migration of the same name.
CREATE TABLE lockstep_processes (
  id           TEXT    NOT NULL PRIMARY KEY,
  host         TEXT    NOT NULL,
  pid          INTEGER NOT NULL,
  version      TEXT    NOT NULL,
  queues       TEXT    NOT NULL,
  workers      INTEGER NOT NULL,
  started_at   TEXT    NOT NULL,
  heartbeat_at TEXT    NOT NULL
) WITHOUT ROWID;
ALTER TABLE lockstep_jobs ADD COLUMN claimed_by TEXT;
