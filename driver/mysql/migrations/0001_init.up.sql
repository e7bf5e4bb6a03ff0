-- Runs own jobs; a run's completion is derived from its jobs, never stored,
-- so finishing a job never writes the run row.
CREATE TABLE lockstep_runs (
  id           BIGINT       NOT NULL AUTO_INCREMENT,
  name         VARCHAR(255) NOT NULL,
  status       VARCHAR(16)  NOT NULL DEFAULT 'ACTIVE',
  metadata     LONGTEXT     NULL,
  created_at   DATETIME(6)  NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
  cancelled_at DATETIME(6)  NULL,
  PRIMARY KEY (id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

-- lockstep_jobs_claim's columns are the claim's equality prefix (queue,
-- status) followed by its ORDER BY (priority, available_at, id), ending in
-- the primary key, so LIMIT n stops after n index entries and nothing sorts.
-- Every by-id write says FORCE INDEX (PRIMARY): with extended keys the
-- status-led heartbeat index is (status, heartbeat_at, id), and MariaDB
-- would otherwise find "WHERE id=? AND status=?" through it, locking the
-- secondary record before PRIMARY — the range cancel's reversed order.
CREATE TABLE lockstep_jobs (
  id            BIGINT       NOT NULL AUTO_INCREMENT,
  run_id        BIGINT       NULL,
  queue         VARCHAR(128) NOT NULL,
  kind          VARCHAR(128) NOT NULL,
  args          LONGTEXT     NOT NULL,
  status        VARCHAR(16)  NOT NULL,
  priority      SMALLINT     NOT NULL DEFAULT 0,
  available_at  DATETIME(6)  NOT NULL,
  attempts      INT          NOT NULL DEFAULT 0,
  max_attempts  INT          NOT NULL,
  started_at    DATETIME(6)  NULL,
  heartbeat_at  DATETIME(6)  NULL,
  finished_at   DATETIME(6)  NULL,
  last_error    TEXT         NULL,
  error_history LONGTEXT     NOT NULL,
  created_at    DATETIME(6)  NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
  PRIMARY KEY (id),
  KEY lockstep_jobs_claim (queue, status, priority, available_at, id),
  KEY lockstep_jobs_run (run_id, id),
  KEY lockstep_jobs_heartbeat (status, heartbeat_at, id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
