-- The job search's text index: optional, applied by
-- 'lockstep migrate text-index up' (or by hand), never by 'migrate up'.
-- Without it a search reads windows of ids, newest first; with it a search
-- the newest window does not answer is found among every job, by any
-- substring of at least three characters (pg_trgm's trigrams; a shorter
-- search still reads windows).
--
-- pg_trgm ships with PostgreSQL (contrib) and is a trusted extension: a
-- user with CREATE on the database may create it. The index is built
-- CONCURRENTLY, so writes go on while it builds; every insert then adds
-- the trigrams of its args and metadata (GIN's pending list batches them).
-- docs/operate.md has the measured costs.
CREATE EXTENSION IF NOT EXISTS pg_trgm;
CREATE INDEX CONCURRENTLY IF NOT EXISTS lockstep_jobs_text ON lockstep_jobs
  USING gin ((args::text) gin_trgm_ops, (metadata::text) gin_trgm_ops);
