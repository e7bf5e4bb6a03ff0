package mysql

import (
	"github.com/lockstep-queue/lockstep/driver/catalog"
	"github.com/lockstep-queue/lockstep/driver/internal/sqlexec"
)

// searchStatements are the search through the optional FULLTEXT index
// (migrations/optional/text_index.up.sql; sqlexec/search.go). pageFilter
// is the job page's filter, bound the same way.
func searchStatements(pageFilter string) []catalog.Statement {
	return []catalog.Statement{
		{
			// Whether the index is there: the server's own catalogue.
			Name: catalog.TextIndexExists,
			SQL: "SELECT COUNT(*) FROM information_schema.STATISTICS" +
				" WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = 'lockstep_jobs' AND INDEX_NAME = 'lockstep_jobs_text'",
		},
		{
			// The newest jobs below an id whose args or metadata hold the
			// search's words (MATCH, a boolean-mode query of each word's
			// case forms, the candidates) and then the search itself (the
			// page's LIKE): a consistent read, no locks, sorted by id
			// after the index found the candidates. A boolean-mode MATCH
			// honours the hint, as every MySQL-family read here has one.
			Name: catalog.JobSearch, Table: "lockstep_jobs", Finds: catalog.JobsText,
			SQL: "SELECT " + sqlexec.JobColumns + " FROM lockstep_jobs FORCE INDEX (lockstep_jobs_text) WHERE MATCH(args, metadata) AGAINST (? IN BOOLEAN MODE) AND id < ?" +
				pageFilter + " ORDER BY id DESC LIMIT ?",
		},
	}
}
