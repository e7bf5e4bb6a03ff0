package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/lockstep-queue/lockstep/bench/internal/depth"
)

func newDepthCmd(r *root) *cobra.Command {
	o := depth.DefaultOptions()
	var databases string
	cmd := &cobra.Command{
		Use:   "depth",
		Short: "Claim latency and rows locked per claim vs the number of PENDING jobs: lockstep's claim and the literal one",
		Long: `depth loads --depths PENDING jobs (ascending; each load adds to the last,
on the server: INSERT … SELECT over generate_series or a digits cross join,
then the statistics are refreshed) and, at each depth, times --claims claims
(median, p99) of --limit jobs, each in a transaction that is rolled back so
the depth stays put, then holds --lock-samples claims open and reads how many
rows they locked. Claims:

  lockstep       the driver's JobClaim on lockstep_jobs (READ COMMITTED)
  literal        the literal claim of a one-table job queue: SELECT * FROM
                 jobs WHERE status = 'PENDING' AND available_at <= NOW()
                 ORDER BY id LIMIT n FOR UPDATE SKIP LOCKED, then UPDATE …
                 SET status = 'RUNNING' WHERE id IN (…), on its own table
                 with its (status, available_at) index, in a scratch
                 database, planned as the server likes (the server's default
                 isolation)
  literal-index  the same query made to find its rows through that index
                 (MariaDB: FORCE INDEX; PostgreSQL: index and sequential
                 scans off, leaving a bitmap scan of it), the plan the
                 servers pick when PENDING rows are a small part of the
                 table; the sort by id then needs every candidate row

Rows locked: MariaDB's INNODB_TRX.trx_rows_locked of the claim's open
transaction (it counts index records, so a row locked in a secondary index
and in the primary key counts twice); PostgreSQL's pgrowlocks (created in
the scratch databases; without it, the rows out of EXPLAIN ANALYZE's
LockRows node).

--done loads that many DONE jobs first, with lower ids than every PENDING
one, as a queue that keeps its finished jobs has: with them the servers
plan the literal claim differently.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			dbs, err := parseDBList(databases)
			if err != nil {
				return err
			}
			set, err := r.Servers(ctx)
			if err != nil {
				return err
			}
			o.Logf = r.Logf
			var results []*depth.Result
			for _, db := range dbs {
				newDB := set.MySQL
				measure := depth.MySQL
				switch db {
				case "postgres":
					newDB, measure = set.Postgres, depth.Postgres
				case "mysql":
					newDB = set.OracleMySQL
				}
				lsDSN, err := newDB(ctx)
				if err != nil {
					return err
				}
				literalDSN, err := newDB(ctx)
				if err != nil {
					_ = set.Drop(ctx, lsDSN)
					return err
				}
				res, err := measure(ctx, lsDSN, literalDSN, o)
				_, _ = set.Drop(ctx, lsDSN), set.Drop(ctx, literalDSN)
				if err != nil {
					if res != nil && len(res.Points) > 0 {
						results = append(results, res)
					}
					if len(results) > 0 {
						_ = depth.WriteText(r.stderr, results)
					}
					return fmt.Errorf("depth on %s: %w", db, err)
				}
				results = append(results, res)
			}
			if r.JSON() {
				return r.writeJSON(struct {
					Results []*depth.Result `json:"results"`
				}{results})
			}
			return depth.WriteText(r.stdout, results)
		},
	}
	f := cmd.Flags()
	f.StringVar(&databases, "databases", "postgres,mariadb", "comma-separated databases: postgres, mariadb, mysql (Oracle MySQL)")
	f.IntSliceVar(&o.Depths, "depths", o.Depths, "numbers of PENDING jobs, ascending")
	f.IntVar(&o.Done, "done", o.Done, "DONE jobs loaded before the PENDING ones (lower ids)")
	f.IntVar(&o.Claims, "claims", o.Claims, "claims timed per claim kind and depth")
	f.IntVar(&o.Limit, "limit", o.Limit, "jobs per claim (lockstep's Max, the literal claim's LIMIT)")
	f.IntVar(&o.LockSamples, "lock-samples", o.LockSamples, "claims held open to read their locks, per claim kind and depth")
	f.DurationVar(&o.Budget, "budget", o.Budget,
		fmt.Sprintf("longest time spent timing one claim kind at one depth (at least %d claims are timed)", depth.MinClaims))
	f.BoolVar(&o.LiteralReadCommitted, "literal-read-committed", false, "run the literal claims at READ COMMITTED instead of the server's default")
	return cmd
}
