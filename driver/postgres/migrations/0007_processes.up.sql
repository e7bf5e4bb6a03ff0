-- The processes that run workers, and the process that claimed a job's
-- current attempt: see the MySQL migration of the same name.
CREATE TABLE lockstep_processes (
  id           text        NOT NULL PRIMARY KEY,
  host         text        NOT NULL,
  pid          bigint      NOT NULL,
  version      text        NOT NULL,
  queues       text        NOT NULL,
  workers      integer     NOT NULL,
  started_at   timestamptz NOT NULL,
  heartbeat_at timestamptz NOT NULL
);
ALTER TABLE lockstep_jobs ADD COLUMN claimed_by text;
