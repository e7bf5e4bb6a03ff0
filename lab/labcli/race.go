package labcli

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"

	"github.com/lockstep-queue/lockstep/internal/cli/clienv"
	"github.com/lockstep-queue/lockstep/internal/dsn"
	"github.com/lockstep-queue/lockstep/lab/attempt"
	"github.com/lockstep-queue/lockstep/lab/race"
)

func newRaceCmd(c *clienv.Env) *cobra.Command {
	var variant, claimPlan, isolation, outDir string
	var rounds, claimers int
	var matrix bool
	var seedN uint64
	cmd := &cobra.Command{
		Use:   "race",
		Short: "Race the attempt table's claim against its cancel for N rounds and count deadlocks",
		Long: `The claim/cancel race: per round, run 3's 100 attempts are reset to
PENDING, then --claimers sessions (each claiming the 100 attempts one
statement at a time, in its own random order) and one canceller start at
once. A round counts when any session got error 1213. --matrix runs every
cancel variant against both claim plans.

It shows how rare the deadlock is, and so why a race test that passes
twenty times proves nothing (see 'lab repro' for the deterministic one).
The attempt table is created in the database --dsn names (MySQL or MariaDB)
and dropped afterwards. --out DIR writes race.csv and race.svg (deadlocking
rounds per experiment). --seed fixes the claim orders.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			level, err := parseIsolation(isolation)
			if err != nil {
				return err
			}
			type cell struct {
				cancel attempt.Cancel
				claim  attempt.Claim
			}
			var cells []cell
			if matrix {
				for _, cn := range attempt.Cancels() {
					for _, cl := range attempt.Claims() {
						cells = append(cells, cell{cn, cl})
					}
				}
			} else {
				cn, err := attempt.LookupCancel(variant)
				if err != nil {
					return err
				}
				cl, err := attempt.LookupClaim(claimPlan)
				if err != nil {
					return err
				}
				cells = []cell{{cn, cl}}
			}
			db, err := openRaceDB(ctx, c.DSN, level)
			if err != nil {
				return err
			}
			defer db.Close()
			defer func() { _ = attempt.Drop(cmd.Context(), db) }()
			var results []*race.Result
			for _, ce := range cells {
				progress, finish := roundProgress(c.Stderr, rounds, fmt.Sprintf("%-16s × claim %-7s", ce.cancel.Name, ce.claim.Name))
				r, err := race.Run(ctx, db, race.Options{Cancel: ce.cancel, Claim: ce.claim, Rounds: rounds, Claimers: claimers, Seed: seedN,
					Progress: progress})
				finish()
				if err != nil {
					return err
				}
				results = append(results, r)
			}
			if err := race.WriteTable(c.Stdout, results); err != nil {
				return err
			}
			if outDir == "" {
				return nil
			}
			if err := os.MkdirAll(outDir, 0o755); err != nil {
				return fmt.Errorf("race: --out: %w", err)
			}
			for name, write := range map[string]func(*os.File) error{
				"race.csv": func(f *os.File) error { return race.WriteCSV(f, results) },
				"race.svg": func(f *os.File) error { return race.WriteSVG(f, results) },
			} {
				f, err := os.Create(filepath.Join(outDir, name))
				if err != nil {
					return fmt.Errorf("race: --out: %w", err)
				}
				if err := errors.Join(write(f), f.Close()); err != nil {
					return fmt.Errorf("race: write %s: %w", name, err)
				}
			}
			fmt.Fprintf(c.Stdout, "wrote %s and %s\n", filepath.Join(outDir, "race.csv"), filepath.Join(outDir, "race.svg"))
			return nil
		},
	}
	cmd.Flags().StringVar(&variant, "variant", "range-status", "the cancel: range-status, range-run, composite, ids-then-primary or range")
	cmd.Flags().StringVar(&claimPlan, "claim-plan", "default", "the claim: default or primary")
	cmd.Flags().StringVar(&isolation, "isolation", "repeatable-read", "the sessions' level: repeatable-read (InnoDB's default) or read-committed")
	cmd.Flags().IntVar(&rounds, "rounds", 1000, "rounds per experiment")
	cmd.Flags().IntVar(&claimers, "claimers", 8, "claiming sessions per round")
	cmd.Flags().BoolVar(&matrix, "matrix", false, "run every cancel variant against both claim plans")
	cmd.Flags().Uint64Var(&seedN, "seed", 1, "seed of the claim orders")
	cmd.Flags().StringVar(&outDir, "out", "", "write race.csv and race.svg into this directory")
	return cmd
}

// openRaceDB opens a MySQL/MariaDB pool whose sessions run at level.
func openRaceDB(ctx context.Context, raw string, level sql.IsolationLevel) (*sql.DB, error) {
	p, err := dsn.Parse(raw)
	if err != nil {
		return nil, err
	}
	if p.Dialect != "mysql" {
		return nil, fmt.Errorf("lab race: the claim/cancel deadlock is InnoDB's; point --dsn at MySQL or MariaDB, not %s", p.Dialect)
	}
	return race.Open(ctx, p.DSN, level)
}

// roundProgress is a progress bar of the rounds on w when w is a
// terminal. Anywhere else (a log file, a pipe, /dev/null) a redrawn bar is
// one line of carriage returns per round, thousands of them in a log; it
// writes a plain line at each tenth of the rounds instead, so that a log
// still shows the run advancing.
func roundProgress(w io.Writer, rounds int, desc string) (progress func(int), finish func()) {
	if !clienv.IsTerminal(w) {
		step := max(rounds/10, 1)
		desc = strings.TrimSpace(desc)
		return func(round int) {
			if round%step == 0 || round == rounds {
				fmt.Fprintf(w, "%s: %d of %d rounds\n", desc, round, rounds)
			}
		}, func() {}
	}
	bar := progressbar.NewOptions(rounds,
		progressbar.OptionSetWriter(w),
		progressbar.OptionSetDescription(desc),
		progressbar.OptionShowCount(),
		progressbar.OptionSetWidth(30),
		progressbar.OptionClearOnFinish())
	return func(int) { _ = bar.Add(1) }, func() { _ = bar.Finish() }
}
