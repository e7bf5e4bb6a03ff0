-- History: what the clients' workers finished, per minute, queue and kind,
-- kept after the jobs themselves are deleted (Config.HistoryRetention).
--
-- Each client counts its own finishes in memory and adds them here every
-- FlushInterval (and at Stop), in a transaction of its own that upserts
-- its rows in primary-key order: never inside a job's transaction, so a
-- finish takes no lock here. A time range is a primary-key range.
--
-- bucket is the minute (UTC, seconds zero); done, failed (final), retried
-- (a failed attempt that will be retried) and cancelled count jobs;
-- run_ms sums the run times of the attempts counted.
CREATE TABLE lockstep_history (
  bucket    DATETIME     NOT NULL,
  queue     VARCHAR(128) NOT NULL,
  kind      VARCHAR(128) NOT NULL,
  done      BIGINT       NOT NULL DEFAULT 0,
  failed    BIGINT       NOT NULL DEFAULT 0,
  retried   BIGINT       NOT NULL DEFAULT 0,
  cancelled BIGINT       NOT NULL DEFAULT 0,
  run_ms    BIGINT       NOT NULL DEFAULT 0,
  PRIMARY KEY (bucket, queue, kind)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
