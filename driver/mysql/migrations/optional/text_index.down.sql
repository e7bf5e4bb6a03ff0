-- Drops the job search's text index; the search goes back to windows of
-- ids. InnoDB keeps the hidden FTS_DOC_ID column until the table is
-- rebuilt.
ALTER TABLE lockstep_jobs DROP INDEX lockstep_jobs_text;
