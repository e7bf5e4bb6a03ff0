-- History: see the MySQL migration of the same name. queue and kind sort
-- bytewise (COLLATE "C"), as the clients sort the rows they flush.
CREATE TABLE lockstep_history (
  bucket    timestamptz NOT NULL,
  queue     text COLLATE "C" NOT NULL,
  kind      text COLLATE "C" NOT NULL,
  done      bigint NOT NULL DEFAULT 0,
  failed    bigint NOT NULL DEFAULT 0,
  retried   bigint NOT NULL DEFAULT 0,
  cancelled bigint NOT NULL DEFAULT 0,
  run_ms    bigint NOT NULL DEFAULT 0,
  PRIMARY KEY (bucket, queue, kind)
);
