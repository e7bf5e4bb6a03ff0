package postgres

import (
	"github.com/lockstep-queue/lockstep/driver/catalog"
	"github.com/lockstep-queue/lockstep/driver/internal/sqlexec"
)

// searchStatements are the search through the optional trigram index
// (migrations/optional/text_index.up.sql; sqlexec/search.go).
func searchStatements() []catalog.Statement {
	return []catalog.Statement{
		{
			// Whether the index is there and valid (a CREATE INDEX
			// CONCURRENTLY that failed leaves an invalid one behind).
			Name: catalog.TextIndexExists,
			SQL: "SELECT COUNT(*) FROM pg_index i WHERE i.indexrelid = to_regclass('lockstep_jobs_text')" +
				" AND i.indrelid = to_regclass('lockstep_jobs') AND i.indisvalid",
		},
		{
			// The newest jobs below an id whose args or metadata hold the
			// search (ILIKE, which the trigram index answers), with the
			// page's filters: a consistent read, no locks. $1 is the
			// search's words, which only MySQL's MATCH takes; here it is
			// only checked not to be empty. ORDER BY id + 0: ordered by
			// the primary key itself, the LIMIT tempts the planner to walk
			// it down from the newest job, filtering as it goes, which
			// for a rare match reads every older job; sorted instead, the
			// matches come from the index and only they are sorted.
			Name: catalog.JobSearch, Table: "lockstep_jobs", Finds: catalog.JobsText,
			SQL: "SELECT " + sqlexec.JobColumns + " FROM lockstep_jobs WHERE $1 <> '' AND id < $2" +
				" AND ($3 = '' OR status = $4) AND ($5 = '' OR queue = $6) AND ($7 = '' OR kind = $8)" +
				" AND ($9 = 0 OR (status = 'PENDING' AND available_at > now())) AND ($10 = 0 OR (status = 'PENDING' AND last_error IS NOT NULL))" +
				" AND ($11 <> '' AND (args::text ILIKE $12 ESCAPE '!' OR metadata::text ILIKE $13 ESCAPE '!')) ORDER BY id + 0 DESC LIMIT $14",
		},
	}
}
