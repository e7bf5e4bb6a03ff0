-- Concurrency limits, sequences and rate limits.
--
-- limit_key is the key a queue's per-key limits count by (a customer, an
-- account, a sequence); NULL for a job without one. BLOCKED is the status
-- of a job a claim found over its key's limit or behind its sequence: it
-- leaves the claim index's range (queue, 'PENDING', …), so the claims that
-- follow do not scan it again, and a job of the same key leaving RUNNING
-- makes it PENDING again (job.unblock, under the key's row).
--
-- lockstep_jobs_limit serves the per-key counts under a key's lock: the
-- RUNNING jobs of a key are one range, and the first live job of a
-- sequence is the first entry of a status's range.
-- BLOCKED holds a unique key as PENDING does: it is a PENDING job that waits
-- for a slot. (The generated column is rewritten with it, so this migration
-- rebuilds the table.)
ALTER TABLE lockstep_jobs
  ADD COLUMN limit_key VARCHAR(255) NULL,
  MODIFY COLUMN unique_active VARCHAR(64) CHARACTER SET ascii COLLATE ascii_bin
    AS (CASE WHEN (unique_states & (CASE status WHEN 'PENDING' THEN 1 WHEN 'BLOCKED' THEN 1 WHEN 'RUNNING' THEN 2 WHEN 'DONE' THEN 4 WHEN 'FAILED' THEN 8 WHEN 'CANCELLED' THEN 16 ELSE 0 END)) <> 0 THEN unique_key END) STORED,
  ADD KEY lockstep_jobs_limit (queue, limit_key, status, id);

-- A queue's limits, shared by every process (NULL or 0: none):
-- concurrency caps its RUNNING jobs; key_concurrency caps them per
-- limit_key; sequence runs each key's jobs one at a time in id order (1: a
-- FAILED job releases its sequence, 2: it holds it until retried); rate
-- jobs may start per rate_period_us microseconds, counted for the whole
-- queue or, with rate_by_key, per limit_key.
ALTER TABLE lockstep_queues
  ADD COLUMN concurrency     INT      NULL,
  ADD COLUMN key_concurrency INT      NULL,
  ADD COLUMN sequence        SMALLINT NOT NULL DEFAULT 0,
  ADD COLUMN rate            INT      NULL,
  ADD COLUMN rate_period_us  BIGINT   NULL,
  ADD COLUMN rate_by_key     SMALLINT NOT NULL DEFAULT 0;

-- One row per (queue, limit_key) a claim has met: the lock that makes the
-- per-key decisions of concurrent claims one at a time. A claim locks these
-- rows after its jobs, with SKIP LOCKED (so it never waits for one); the
-- release of a key's BLOCKED jobs locks one first, waiting, and then its
-- jobs by primary key. Rows are created outside any other transaction, by
-- themselves, when a claim meets a key without one.
CREATE TABLE lockstep_limit_keys (
  queue      VARCHAR(128) NOT NULL,
  limit_key  VARCHAR(255) NOT NULL,
  created_at DATETIME(6)  NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
  PRIMARY KEY (queue, limit_key)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

-- The starts of a rate-limited queue (limit_key '') or key within the
-- current window, written by the claim that started them, under the
-- queue's or the key's lock; older ones are deleted by the next claim.
CREATE TABLE lockstep_limit_starts (
  queue      VARCHAR(128) NOT NULL,
  limit_key  VARCHAR(255) NOT NULL,
  started_at DATETIME(6)  NOT NULL,
  job_id     BIGINT       NOT NULL,
  PRIMARY KEY (queue, limit_key, started_at, job_id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
