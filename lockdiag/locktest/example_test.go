package locktest_test

import (
	"context"
	"database/sql"
	"fmt"
	"log"
	"time"

	_ "github.com/go-sql-driver/mysql"

	"github.com/lockstep-queue/lockstep/lockdiag/locktest"
	"github.com/lockstep-queue/lockstep/lockdiag/lockview"
)

// The claim/cancel regression test, in Go: session A holds PRIMARY 300,
// session B (the cancel) must be seen waiting for it, then A runs the claim.
// Both must finish; a deadlock would surface as error 1213 in one of them.
// (Compiled, not run: it needs your MySQL/MariaDB database.)
func ExampleInterleave() {
	db, err := sql.Open("mysql", "app:secret@tcp(127.0.0.1:3306)/app")
	if err != nil {
		log.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	claim := func(ctx context.Context, pause func()) error {
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		defer func() { _ = tx.Rollback() }()
		var id int64
		if err := tx.QueryRowContext(ctx, "SELECT id FROM attempt WHERE id = 300 FOR UPDATE").Scan(&id); err != nil {
			return err
		}
		pause() // B runs now, and is seen waiting, before A goes on
		if _, err := tx.ExecContext(ctx, "UPDATE attempt FORCE INDEX (PRIMARY) SET status = 'RUNNING' WHERE id = 300 AND status = 'PENDING'"); err != nil {
			return err
		}
		return tx.Commit()
	}
	cancelRun := func(ctx context.Context) error {
		_, err := db.ExecContext(ctx, "UPDATE attempt FORCE INDEX (PRIMARY) SET status = 'CANCELLED' WHERE id = 300 AND status IN ('PENDING', 'RUNNING')")
		return err
	}

	out, err := locktest.Interleave(ctx, db, lockview.MariaDB, claim, cancelRun)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("cancel waited:", out.BWaited, "claim:", out.ErrA, "cancel:", out.ErrB)
}
