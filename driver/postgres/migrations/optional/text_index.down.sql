-- Drops the job search's text index; the search goes back to windows of
-- ids. The pg_trgm extension stays: other tables may use it.
DROP INDEX CONCURRENTLY IF EXISTS lockstep_jobs_text;
