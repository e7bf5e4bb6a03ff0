package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/lockstep-queue/lockstep/bench/internal/floor"
)

func newFloorCmd(r *root) *cobra.Command {
	o := floor.DefaultOptions()
	var databases string
	cmd := &cobra.Command{
		Use:   "floor",
		Short: "The databases' own jobs/s for a job's row writes (insert, SKIP LOCKED claim, finish), no queue machinery",
		Long: `floor measures the write floor: the jobs per second a database carries when
all it does is the row writes a job needs, on lockstep's own lockstep_jobs
table (same indexes), with no queue around them. A job is one inserted row,
one claim and one finish, each committed:

  insert  one multi-row INSERT of --batch rows (made on the server)
  claim   PostgreSQL: UPDATE … SET status = 'RUNNING' WHERE id = ANY(ARRAY(
          SELECT id … ORDER BY priority, available_at, id LIMIT n
          FOR UPDATE SKIP LOCKED)) RETURNING id;
          MariaDB: SELECT id … FOR UPDATE SKIP LOCKED, then UPDATE … WHERE
          id IN (…), in one short transaction
  finish  UPDATE … SET status = 'DONE' WHERE id IN (…)

Each of --concurrency loops repeats insert, claim, finish; a job counts when
its finish has committed, over --duration after --warmup. Every batch size
is tried at every concurrency, each on an emptied table; the table shows
jobs/s for each, and the best is the floor.`,
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
			var results []*floor.Result
			for _, db := range dbs {
				var res *floor.Result
				if db == "postgres" {
					dsn, err := set.Postgres(ctx)
					if err != nil {
						return err
					}
					res, err = floor.Postgres(ctx, dsn, o)
					_ = set.Drop(ctx, dsn)
				} else {
					newDB := set.MySQL
					if db == "mysql" {
						newDB = set.OracleMySQL
					}
					dsn, err := newDB(ctx)
					if err != nil {
						return err
					}
					res, err = floor.MySQL(ctx, dsn, o)
					_ = set.Drop(ctx, dsn)
				}
				if err != nil {
					if len(results) > 0 {
						_ = floor.WriteText(r.stderr, results)
					}
					return fmt.Errorf("floor on %s: %w", db, err)
				}
				results = append(results, res)
			}
			if r.JSON() {
				return r.writeJSON(struct {
					Results []*floor.Result `json:"results"`
				}{results})
			}
			return floor.WriteText(r.stdout, results)
		},
	}
	f := cmd.Flags()
	f.StringVar(&databases, "databases", "postgres,mariadb", "comma-separated databases: postgres, mariadb, mysql (Oracle MySQL)")
	f.IntSliceVar(&o.Batches, "batch", o.Batches, "batch sizes tried (rows per insert, claim and finish)")
	f.IntSliceVar(&o.Concurrency, "concurrency", o.Concurrency, "numbers of concurrent loops tried")
	f.DurationVar(&o.Duration, "duration", o.Duration, "measured interval of each point")
	f.DurationVar(&o.Warmup, "warmup", o.Warmup, "time before each point's measured interval")
	return cmd
}

// parseDBList reads a comma-separated list of postgres, mariadb and mysql
// (Oracle MySQL, which the harness starts from its userland).
func parseDBList(s string) ([]string, error) {
	var out []string
	for _, d := range strings.Split(s, ",") {
		switch d = strings.ToLower(strings.TrimSpace(d)); d {
		case "postgres", "postgresql", "pg":
			out = append(out, "postgres")
		case "mariadb":
			out = append(out, "mariadb")
		case "mysql", "oracle-mysql":
			out = append(out, "mysql")
		case "":
		default:
			return nil, fmt.Errorf("--databases: unknown database %q (want postgres, mariadb, mysql)", d)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("--databases: none given")
	}
	return out, nil
}
