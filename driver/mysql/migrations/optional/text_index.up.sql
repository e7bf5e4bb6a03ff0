-- The job search's text index: optional, applied by
-- 'lockstep migrate text-index up' (or by hand), never by 'migrate up'.
-- Without it a search reads windows of ids, newest first; with it a search
-- the newest window does not answer finds its words among every job.
--
-- InnoDB's FULLTEXT finds words (letters, digits and '_'), as stored: the
-- columns' collation is binary, so a search asks for each word as typed,
-- in lower case, upper case and capitalised, and the page's LIKE then
-- checks the text itself. Stopwords are off so that no word is left out.
--
-- Adding the first FULLTEXT index rebuilds the table (InnoDB adds its
-- FTS_DOC_ID column) and holds back writes while it does; every insert
-- then tokenises args and metadata at commit, and deleted jobs' words stay
-- in the index until OPTIMIZE TABLE with innodb_optimize_fulltext_only.
-- docs/operate.md has the measured costs.
SET SESSION innodb_ft_enable_stopword = OFF;
ALTER TABLE lockstep_jobs ADD FULLTEXT INDEX lockstep_jobs_text (args, metadata);
