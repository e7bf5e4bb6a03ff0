// Package race is the claim/cancel deadlock's race measurement: per round,
// one run's 100 attempts are reset to PENDING, then eight claimers (each
// claiming the run's attempts one statement at a time, in its own random
// order) and one canceller start at once; a round counts when any of them
// got error 1213.
// It shows how rare the deadlock is — and why a race test that passes
// twenty times proves nothing.
package race

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"
	"sync"
	"time"

	gomysql "github.com/go-sql-driver/mysql"

	"github.com/lockstep-queue/lockstep/lab/attempt"
)

// Options configure one experiment (one cancel variant and claim plan).
type Options struct {
	Cancel attempt.Cancel
	Claim  attempt.Claim
	// Rounds: default 1000. Claimers: default 8.
	Rounds, Claimers int
	// Seed makes each round's claim orders reproducible.
	Seed uint64
	// Progress, when set, is called after each round.
	Progress func(round int)
}

// Result is one experiment's outcome.
type Result struct {
	Cancel, Claim string
	Rounds        int
	// DeadlockRounds counts rounds with at least one error 1213.
	DeadlockRounds int
	// Errors counts every error by MySQL error number (0: not a server
	// error), across all rounds.
	Errors   map[uint16]int
	Duration time.Duration
}

// Run sets up the attempt table (in the database db names; isolation is the
// pool's: open it with the session level to test) and runs the rounds. The
// table is left for the next experiment; Drop it at the end.
func Run(ctx context.Context, db *sql.DB, opts Options) (*Result, error) {
	if opts.Rounds <= 0 {
		opts.Rounds = 1000
	}
	if opts.Claimers <= 0 {
		opts.Claimers = 8
	}
	if err := attempt.Create(ctx, db); err != nil {
		return nil, err
	}
	if opts.Cancel.Setup != "" {
		if _, err := db.ExecContext(ctx, opts.Cancel.Setup); err != nil {
			return nil, fmt.Errorf("race: %s: %w", opts.Cancel.Name, err)
		}
	}
	if err := attempt.Load(ctx, db, attempt.TwoPending()); err != nil {
		return nil, err
	}
	// Enough connections for every session of a round at once.
	db.SetMaxOpenConns(max(opts.Claimers+4, 16))
	db.SetMaxIdleConns(opts.Claimers + 4)
	ids, err := runIDs(ctx, db)
	if err != nil {
		return nil, err
	}
	rng := rand.New(rand.NewPCG(opts.Seed, opts.Seed^0x9e3779b97f4a7c15))
	res := &Result{Cancel: opts.Cancel.Name, Claim: opts.Claim.Name, Errors: map[uint16]int{}}
	start := time.Now()
	for round := 1; round <= opts.Rounds; round++ {
		if err := ctx.Err(); err != nil {
			return res, err
		}
		if _, err := db.ExecContext(ctx, "UPDATE attempt SET status = 'PENDING' WHERE run_id = ?", attempt.Target); err != nil {
			return res, fmt.Errorf("race: reset round %d: %w", round, err)
		}
		orders := make([][]int64, opts.Claimers)
		for i := range orders {
			orders[i] = append([]int64(nil), ids...)
			rng.Shuffle(len(orders[i]), func(a, b int) { orders[i][a], orders[i][b] = orders[i][b], orders[i][a] })
		}
		errs, err := playRound(ctx, db, opts, orders)
		if err != nil {
			return res, fmt.Errorf("race: round %d: %w", round, err)
		}
		deadlocked := false
		for _, e := range errs {
			var me *gomysql.MySQLError
			code := uint16(0)
			if errors.As(e, &me) {
				code = me.Number
			}
			res.Errors[code]++
			deadlocked = deadlocked || code == 1213
		}
		if deadlocked {
			res.DeadlockRounds++
		}
		res.Rounds = round
		if opts.Progress != nil {
			opts.Progress(round)
		}
	}
	res.Duration = time.Since(start)
	return res, nil
}

func runIDs(ctx context.Context, db *sql.DB) ([]int64, error) {
	rows, err := db.QueryContext(ctx, "SELECT id FROM attempt WHERE run_id = ? ORDER BY id", attempt.Target)
	if err != nil {
		return nil, fmt.Errorf("race: %w", err)
	}
	defer rows.Close()
	var ids []int64
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			return nil, err
		}
		ids = append(ids, id)
	}
	return ids, rows.Err()
}

// playRound releases the claimers and the canceller together and returns
// the errors they met (deadlocks, lock wait timeouts), or an error that
// ends the experiment (a lost connection, ctx).
func playRound(ctx context.Context, db *sql.DB, opts Options, orders [][]int64) ([]error, error) {
	// Connections first, so that the start line is not a connect.
	conns := make([]*sql.Conn, len(orders)+1)
	for i := range conns {
		c, err := db.Conn(ctx)
		if err != nil {
			return nil, err
		}
		defer c.Close()
		conns[i] = c
	}
	var mu sync.Mutex
	var met []error
	note := func(err error) {
		mu.Lock()
		met = append(met, err)
		mu.Unlock()
	}
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i, order := range orders {
		wg.Add(1)
		go func(c *sql.Conn) {
			defer wg.Done()
			<-start
			for _, id := range order {
				if _, err := c.ExecContext(ctx, opts.Claim.SQL, id); err != nil {
					note(err)
				}
			}
		}(conns[i])
	}
	wg.Add(1)
	go func(c *sql.Conn) {
		defer wg.Done()
		<-start
		if err := cancelRun(ctx, c, opts.Cancel); err != nil {
			note(err)
		}
	}(conns[len(orders)])
	close(start)
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	for _, e := range met {
		var me *gomysql.MySQLError
		if !errors.As(e, &me) {
			return nil, e
		}
	}
	return met, nil
}

// cancelRun runs the cancel in one transaction, as an application would.
func cancelRun(ctx context.Context, c *sql.Conn, cancel attempt.Cancel) error {
	tx, err := c.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback() }()
	stmts, err := cancel.Statements(ctx, tx, int64(attempt.Target))
	if err != nil {
		return err
	}
	for _, s := range stmts {
		if _, err := tx.ExecContext(ctx, s.SQL, s.Args...); err != nil {
			return err
		}
	}
	return tx.Commit()
}

// Open opens a pool on dsn (a go-sql-driver/mysql DSN) whose sessions run
// at level, READ COMMITTED or REPEATABLE READ: the claimers' statements are
// autocommit, so the session's level is theirs. It asks the server which
// variable sets the level: MariaDB before 11.1 knows only tx_isolation,
// MySQL 8+ and MariaDB 11.1+ transaction_isolation (both fail the other's
// name with error 1193).
func Open(ctx context.Context, dsn string, level sql.IsolationLevel) (*sql.DB, error) {
	value, ok := map[sql.IsolationLevel]string{sql.LevelRepeatableRead: "REPEATABLE-READ", sql.LevelReadCommitted: "READ-COMMITTED"}[level]
	if !ok {
		return nil, fmt.Errorf("race: isolation level %v: want READ COMMITTED or REPEATABLE READ", level)
	}
	cfg, err := gomysql.ParseDSN(dsn)
	if err != nil {
		return nil, fmt.Errorf("race: %w", err)
	}
	probe, err := sql.Open("mysql", cfg.FormatDSN())
	if err != nil {
		return nil, fmt.Errorf("race: %w", err)
	}
	name, err := isolationVariable(ctx, probe)
	_ = probe.Close()
	if err != nil {
		return nil, err
	}
	params := map[string]string{}
	for k, v := range cfg.Params {
		params[k] = v
	}
	params[name] = "'" + value + "'"
	cfg.Params = params
	db, err := sql.Open("mysql", cfg.FormatDSN())
	if err != nil {
		return nil, fmt.Errorf("race: %w", err)
	}
	var got string
	if err := db.QueryRowContext(ctx, "SELECT @@"+name).Scan(&got); err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("race: connect: %w", err)
	}
	if got != value {
		_ = db.Close()
		return nil, fmt.Errorf("race: the sessions run at %s, not %s", got, value)
	}
	return db, nil
}

// isolationVariable names the server's session variable of the isolation
// level, from its version.
func isolationVariable(ctx context.Context, db *sql.DB) (string, error) {
	var version string
	if err := db.QueryRowContext(ctx, "SELECT VERSION()").Scan(&version); err != nil {
		return "", fmt.Errorf("race: connect: %w", err)
	}
	if !strings.Contains(strings.ToLower(version), "mariadb") {
		return "transaction_isolation", nil
	}
	var major, minor int
	if _, err := fmt.Sscanf(version, "%d.%d", &major, &minor); err != nil {
		return "", fmt.Errorf("race: server version %q: %w", version, err)
	}
	if major < 11 || major == 11 && minor < 1 {
		return "tx_isolation", nil
	}
	return "transaction_isolation", nil
}

// Codes lists the error numbers of a result in ascending order.
func (r *Result) Codes() []uint16 {
	out := make([]uint16, 0, len(r.Errors))
	for c := range r.Errors {
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}
