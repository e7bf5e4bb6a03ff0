-- Runs own jobs; a run's completion is derived from its jobs, never stored,
-- so finishing a job never writes the run row.
CREATE TABLE lockstep_runs (
  id           bigserial   PRIMARY KEY,
  name         text        NOT NULL,
  status       text        NOT NULL DEFAULT 'ACTIVE' CHECK (status IN ('ACTIVE', 'CANCELLED')),
  metadata     jsonb,
  created_at   timestamptz NOT NULL DEFAULT now(),
  cancelled_at timestamptz
);

CREATE TABLE lockstep_jobs (
  id            bigserial   PRIMARY KEY,
  run_id        bigint,
  queue         text        NOT NULL,
  kind          text        NOT NULL,
  args          jsonb       NOT NULL,
  status        text        NOT NULL CHECK (status IN ('PENDING', 'RUNNING', 'DONE', 'FAILED', 'CANCELLED')),
  priority      smallint    NOT NULL DEFAULT 0,
  available_at  timestamptz NOT NULL DEFAULT now(),
  attempts      integer     NOT NULL DEFAULT 0,
  max_attempts  integer     NOT NULL,
  started_at    timestamptz,
  heartbeat_at  timestamptz,
  finished_at   timestamptz,
  last_error    text,
  error_history jsonb       NOT NULL DEFAULT '[]',
  created_at    timestamptz NOT NULL DEFAULT now()
);

-- The claim's ORDER BY, ending in the primary key, over PENDING rows only:
-- LIMIT n reads n index entries and nothing sorts.
CREATE INDEX lockstep_jobs_claim ON lockstep_jobs (queue, priority, available_at, id) WHERE status = 'PENDING';
CREATE INDEX lockstep_jobs_run ON lockstep_jobs (run_id, id) WHERE run_id IS NOT NULL;
CREATE INDEX lockstep_jobs_heartbeat ON lockstep_jobs (heartbeat_at, id) WHERE status = 'RUNNING';
