-- History: see the MySQL migration of the same name. bucket is the
-- minute as text in the queue's time layout (seconds zero).
CREATE TABLE lockstep_history (
  bucket    TEXT    NOT NULL,
  queue     TEXT    NOT NULL,
  kind      TEXT    NOT NULL,
  done      INTEGER NOT NULL DEFAULT 0,
  failed    INTEGER NOT NULL DEFAULT 0,
  retried   INTEGER NOT NULL DEFAULT 0,
  cancelled INTEGER NOT NULL DEFAULT 0,
  run_ms    INTEGER NOT NULL DEFAULT 0,
  PRIMARY KEY (bucket, queue, kind)
) WITHOUT ROWID;
