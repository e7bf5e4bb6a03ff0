package corpusgen

import (
	"context"
	"database/sql"
	"fmt"
	"regexp"

	"github.com/lockstep-queue/lockstep/lab/attempt"
	"github.com/lockstep-queue/lockstep/lockdiag/lockview"
)

// scenario is one deadlock, scripted: its tables and rows, its sessions
// (A, B, C, … each a connection with a transaction open at REPEATABLE
// READ) and the statements they run, in order.
type scenario struct {
	// name is the file name's stem; pattern the sidecar's pattern.
	name, pattern string
	tables        []string // CREATE TABLE statements
	// load fills tables it creates itself (the lab's attempt table);
	// loaded names them for the schema file.
	load   func(ctx context.Context, db *sql.DB) error
	loaded []string
	rows   []string // INSERTs, committed before the sessions begin
	// sessions is how many connections take part; inCycle how many of
	// them the report prints, when fewer (the duplicate-key case's first
	// inserter makes the cycle possible and leaves before it forms).
	sessions, inCycle int
	steps             []step
	// racy says why the report's numbering and victim vary from run to
	// run, when they do: the live report is then matched to the sidecar
	// by statement.
	racy string
	// victimErr is the error the victim's client gets when it is not
	// 1213 (ER_LOCK_DEADLOCK).
	victimErr uint16
	// errorLog also captures the server's error-log block for this
	// deadlock (NAME.SERVER.errorlog.txt).
	errorLog bool
	// cannot returns why srv cannot produce this deadlock, or "" when it
	// can. It asks the server, so that the reason is checked on every run
	// rather than remembered.
	cannot func(ctx context.Context, admin *sql.DB, srv server) (string, error)
}

// step is one statement of one session. A step with wait set must block
// on a lock, and is seen doing so in the server's lock tables before the
// next step starts; the others must finish first. The last step closes the
// cycle; its error, or a waiting step's, is the 1213.
type step struct {
	session int
	sql     func(lockview.Flavor) string
	wait    bool
}

// run is a step that must finish before the next one starts.
func do(session int, q string) step {
	return step{session: session, sql: func(lockview.Flavor) string { return q }}
}

// blocks is a step that must be seen waiting for a lock.
func blocks(session int, q string) step {
	return step{session: session, sql: func(lockview.Flavor) string { return q }, wait: true}
}

const (
	sA = iota
	sB
	sC
)

var createTable = regexp.MustCompile("(?i)^CREATE TABLE `?(\\w+)`?")

// victimError is the error number the victim's statement fails with.
func (sc scenario) victimError() uint16 {
	if sc.victimErr != 0 {
		return sc.victimErr
	}
	return 1213
}

// reported is how many transactions the report prints.
func (sc scenario) reported() int {
	if sc.inCycle > 0 {
		return sc.inCycle
	}
	return sc.sessions
}

// tableNames are the scenario's tables in creation order (parents first).
func (sc scenario) tableNames() []string {
	out := append([]string(nil), sc.loaded...)
	for _, q := range sc.tables {
		if m := createTable.FindStringSubmatch(q); m != nil {
			out = append(out, m[1])
		}
	}
	return out
}

// shareLock is the locking read for a shared lock: MariaDB 10.11 knows
// only LOCK IN SHARE MODE; MySQL 8+ spells it FOR SHARE (and still accepts
// the old form, deprecated).
func shareLock(q string) func(lockview.Flavor) string {
	return func(f lockview.Flavor) string {
		if f == lockview.MariaDB {
			return q + " LOCK IN SHARE MODE"
		}
		return q + " FOR SHARE"
	}
}

// patterns are one scenario per pattern the decoder names, each the
// everyday shape of it.
func patterns() []scenario {
	return []scenario{
		{
			// The write-up's case, as lab/repro plays it: the claim holds
			// PRIMARY 300, the cancel goes through idx_status and waits for
			// it holding ('PENDING', 300) there, and the claim's UPDATE,
			// changing status, must delete-mark that very entry.
			name: "opposite-index-order", pattern: "opposite-index-order",
			load: func(ctx context.Context, db *sql.DB) error {
				if err := attempt.Create(ctx, db); err != nil {
					return err
				}
				return attempt.Load(ctx, db, attempt.TwoPending())
			},
			loaded:   []string{attempt.Table},
			sessions: 2,
			steps: []step{
				do(sA, "SELECT id FROM attempt WHERE id = 300 FOR UPDATE"),
				blocks(sB, "UPDATE attempt FORCE INDEX(idx_status) SET status='CANCELLED' WHERE run_id=3 AND status IN ('PENDING','RUNNING')"),
				do(sA, "UPDATE attempt FORCE INDEX(PRIMARY) SET status='RUNNING' WHERE id=300 AND status='PENDING'"),
			},
			errorLog: true,
		},
		{
			name: "opposite-row-order", pattern: "opposite-row-order",
			tables:   []string{"CREATE TABLE account (id INT PRIMARY KEY, balance INT NOT NULL) ENGINE=InnoDB"},
			rows:     []string{"INSERT INTO account VALUES (1, 100), (2, 100)"},
			sessions: 2,
			steps: []step{
				do(sA, "UPDATE account SET balance = balance - 10 WHERE id = 1"),
				do(sB, "UPDATE account SET balance = balance - 20 WHERE id = 2"),
				blocks(sA, "UPDATE account SET balance = balance + 10 WHERE id = 2"),
				do(sB, "UPDATE account SET balance = balance + 20 WHERE id = 1"),
			},
		},
		{
			// Check-then-insert: a locking read of a missing key locks the
			// gap before the next record (gap locks never conflict), then
			// each INSERT's insert intention waits for the other's gap lock.
			name: "gap-insert-intention", pattern: "gap-insert-intention",
			tables: []string{"CREATE TABLE slot (id INT PRIMARY KEY, owner VARCHAR(20) NOT NULL) ENGINE=InnoDB"},
			rows:   []string{"INSERT INTO slot VALUES (10, 'x'), (20, 'y')"},
			steps: []step{
				do(sA, "SELECT id FROM slot WHERE id = 15 FOR UPDATE"),
				do(sB, "SELECT id FROM slot WHERE id = 16 FOR UPDATE"),
				blocks(sA, "INSERT INTO slot VALUES (15, 'a')"),
				do(sB, "INSERT INTO slot VALUES (16, 'b')"),
			},
			sessions: 2,
		},
		{
			name: "share-upgrade", pattern: "share-upgrade",
			tables:   []string{"CREATE TABLE counter (id INT PRIMARY KEY, n INT NOT NULL) ENGINE=InnoDB"},
			rows:     []string{"INSERT INTO counter VALUES (1, 0)"},
			sessions: 2,
			steps: []step{
				{session: sA, sql: shareLock("SELECT n FROM counter WHERE id = 1")},
				{session: sB, sql: shareLock("SELECT n FROM counter WHERE id = 1")},
				blocks(sA, "UPDATE counter SET n = n + 1 WHERE id = 1"),
				do(sB, "UPDATE counter SET n = n + 1 WHERE id = 1"),
			},
		},
		{
			// The manual's example: B and C find A's uncommitted duplicate
			// and wait for a shared lock on it; A rolls back, both get the
			// S lock, and each one's insert intention waits for the other's.
			name: "duplicate-key-share", pattern: "duplicate-key-share",
			tables:   []string{"CREATE TABLE member (id INT PRIMARY KEY, email VARCHAR(64) NOT NULL, UNIQUE KEY uk_email (email)) ENGINE=InnoDB"},
			rows:     []string{"INSERT INTO member VALUES (1, 'a@example.com')"},
			sessions: 3, inCycle: 2,
			racy: "A's rollback wakes B and C together; which one asks for its insert intention first, and so closes the cycle and is rolled back, is up to the scheduler",
			steps: []step{
				do(sA, "INSERT INTO member VALUES (2, 'b@example.com')"),
				blocks(sB, "INSERT INTO member VALUES (3, 'b@example.com')"),
				blocks(sC, "INSERT INTO member VALUES (4, 'b@example.com')"),
				do(sA, "ROLLBACK"),
			},
		},
		{
			// Inserting a child takes a shared lock on its parent row (the
			// foreign-key check); both sessions then update the parent.
			name: "foreign-key-parent", pattern: "foreign-key-parent",
			tables: []string{
				"CREATE TABLE orders (id INT PRIMARY KEY, items INT NOT NULL) ENGINE=InnoDB",
				"CREATE TABLE order_item (id INT PRIMARY KEY, order_id INT NOT NULL, KEY idx_order (order_id), CONSTRAINT fk_order FOREIGN KEY (order_id) REFERENCES orders (id)) ENGINE=InnoDB",
			},
			rows:     []string{"INSERT INTO orders VALUES (7, 0)"},
			sessions: 2,
			steps: []step{
				do(sA, "INSERT INTO order_item VALUES (1, 7)"),
				do(sB, "INSERT INTO order_item VALUES (2, 7)"),
				blocks(sA, "UPDATE orders SET items = items + 1 WHERE id = 7"),
				do(sB, "UPDATE orders SET items = items + 1 WHERE id = 7"),
			},
		},
		{
			// With innodb_autoinc_lock_mode=1 an INSERT … SELECT holds the
			// table's AUTO-INC lock to the end of the statement, and a
			// plain INSERT waits for it. B's INSERT … SELECT takes AUTO-INC
			// on its first row, then waits for source row 2 (A updated it);
			// A's INSERT waits for AUTO-INC. A is the victim, and MariaDB
			// hands its client not 1213 but 1467 (ER_AUTOINC_READ_FAILED,
			// "Failed to read auto-increment value from storage engine"):
			// the deadlock is found while the handler reads the counter,
			// which reports any failure so. The transaction is rolled back
			// all the same.
			name: "auto-inc", pattern: "auto-inc", victimErr: 1467,
			tables: []string{
				"CREATE TABLE src (id INT PRIMARY KEY, v INT NOT NULL) ENGINE=InnoDB",
				"CREATE TABLE dst (id INT AUTO_INCREMENT PRIMARY KEY, v INT NOT NULL) ENGINE=InnoDB",
			},
			rows:     []string{"INSERT INTO src VALUES (1, 10), (2, 20)"},
			sessions: 2,
			steps: []step{
				do(sA, "UPDATE src SET v = v + 1 WHERE id = 2"),
				blocks(sB, "INSERT INTO dst (v) SELECT v FROM src ORDER BY id"),
				do(sA, "INSERT INTO dst (v) VALUES (99)"),
			},
			cannot: func(ctx context.Context, admin *sql.DB, srv server) (string, error) {
				var mode int
				if err := admin.QueryRowContext(ctx, "SELECT @@innodb_autoinc_lock_mode").Scan(&mode); err != nil {
					return "", err
				}
				if mode == 2 {
					return "innodb_autoinc_lock_mode=2 (interleaved, MySQL 8's default): no statement takes the AUTO-INC table lock, and the variable is read-only (a startup option of the shared test server)", nil
				}
				return "", nil
			},
		},
		{
			name: "cycle", pattern: "cycle",
			tables:   []string{"CREATE TABLE seat (id INT PRIMARY KEY, taken_by VARCHAR(8) NULL) ENGINE=InnoDB"},
			rows:     []string{"INSERT INTO seat VALUES (1, NULL), (2, NULL), (3, NULL)"},
			sessions: 3,
			steps: []step{
				do(sA, "UPDATE seat SET taken_by = 'A' WHERE id = 1"),
				do(sB, "UPDATE seat SET taken_by = 'B' WHERE id = 2"),
				do(sC, "UPDATE seat SET taken_by = 'C' WHERE id = 3"),
				blocks(sA, "UPDATE seat SET taken_by = 'A' WHERE id = 2"),
				blocks(sB, "UPDATE seat SET taken_by = 'B' WHERE id = 3"),
				do(sC, "UPDATE seat SET taken_by = 'C' WHERE id = 1"),
			},
		},
	}
}

// keyType is a primary-key column type and two values of it, literal SQL.
type keyType struct {
	name, typ string
	v1, v2    string
}

// keyTypes are the types whose stored bytes cannot be read without the
// schema: unsigned integers (stored as is, where signed ones have the top
// bit flipped), one-byte integers whose byte is printable, CHAR (padded),
// DATETIME/TIMESTAMP/DATE (packed).
func keyTypes() []keyType {
	return []keyType{
		// 18446744073709551000 has the top bit set: read as signed it
		// comes out as a plausible positive number, not a negative one.
		{"key-bigint-unsigned", "BIGINT UNSIGNED", "129022", "18446744073709551000"},
		{"key-int-unsigned", "INT UNSIGNED", "7", "3000000000"},
		{"key-smallint-unsigned", "SMALLINT UNSIGNED", "7", "40000"},
		{"key-mediumint-unsigned", "MEDIUMINT UNSIGNED", "7", "10000000"},
		// 33 is '!' unsigned; -7 is stored as 0x79, 'y'.
		{"key-tinyint", "TINYINT", "33", "-7"},
		{"key-tinyint-unsigned", "TINYINT UNSIGNED", "33", "200"},
		{"key-char", "CHAR(10)", "'ab'", "'cd'"},
		{"key-datetime6", "DATETIME(6)", "'2024-01-02 03:04:05.123456'", "'2024-06-30 23:59:59.000001'"},
		{"key-timestamp3", "TIMESTAMP(3)", "'2024-01-02 03:04:05.123'", "'2030-05-06 07:08:09.456'"},
		{"key-date", "DATE", "'2024-01-02'", "'1999-12-31'"},
	}
}

// keyScenarios are opposite row order, the simplest shape, on a table
// whose primary key is of each type; then two on a secondary index of such
// a column, where the key printed is the column and then the primary key.
func keyScenarios() []scenario {
	var out []scenario
	for _, k := range keyTypes() {
		out = append(out, scenario{
			name: k.name, pattern: "opposite-row-order",
			tables:   []string{fmt.Sprintf("CREATE TABLE item (id %s NOT NULL PRIMARY KEY, n INT NOT NULL) ENGINE=InnoDB", k.typ)},
			rows:     []string{fmt.Sprintf("INSERT INTO item VALUES (%s, 0), (%s, 0)", k.v1, k.v2)},
			sessions: 2,
			steps: []step{
				do(sA, fmt.Sprintf("UPDATE item SET n = n + 1 WHERE id = %s", k.v1)),
				do(sB, fmt.Sprintf("UPDATE item SET n = n + 1 WHERE id = %s", k.v2)),
				blocks(sA, fmt.Sprintf("UPDATE item SET n = n + 1 WHERE id = %s", k.v2)),
				do(sB, fmt.Sprintf("UPDATE item SET n = n + 1 WHERE id = %s", k.v1)),
			},
		})
	}
	out = append(out,
		scenario{
			name: "key-secondary-unsigned", pattern: "opposite-row-order",
			tables: []string{"CREATE TABLE ext_ref (id BIGINT UNSIGNED NOT NULL PRIMARY KEY, ext INT UNSIGNED NOT NULL, KEY idx_ext (ext)) ENGINE=InnoDB"},
			rows:   []string{"INSERT INTO ext_ref VALUES (129022, 3000000000), (3000000001, 5)"},
			steps: []step{
				do(sA, "SELECT id FROM ext_ref FORCE INDEX (idx_ext) WHERE ext = 3000000000 FOR UPDATE"),
				do(sB, "SELECT id FROM ext_ref FORCE INDEX (idx_ext) WHERE ext = 5 FOR UPDATE"),
				blocks(sA, "SELECT id FROM ext_ref FORCE INDEX (idx_ext) WHERE ext = 5 FOR UPDATE"),
				do(sB, "SELECT id FROM ext_ref FORCE INDEX (idx_ext) WHERE ext = 3000000000 FOR UPDATE"),
			},
			sessions: 2,
		},
		scenario{
			name: "key-secondary-datetime6", pattern: "opposite-row-order",
			tables: []string{"CREATE TABLE event (id INT UNSIGNED NOT NULL PRIMARY KEY, at DATETIME(6) NOT NULL, KEY idx_at (at)) ENGINE=InnoDB"},
			rows:   []string{"INSERT INTO event VALUES (1, '2024-01-02 03:04:05.123456'), (2, '1970-01-01 00:00:00.5')"},
			steps: []step{
				do(sA, "SELECT id FROM event FORCE INDEX (idx_at) WHERE at = '2024-01-02 03:04:05.123456' FOR UPDATE"),
				do(sB, "SELECT id FROM event FORCE INDEX (idx_at) WHERE at = '1970-01-01 00:00:00.5' FOR UPDATE"),
				blocks(sA, "SELECT id FROM event FORCE INDEX (idx_at) WHERE at = '1970-01-01 00:00:00.5' FOR UPDATE"),
				do(sB, "SELECT id FROM event FORCE INDEX (idx_at) WHERE at = '2024-01-02 03:04:05.123456' FOR UPDATE"),
			},
			sessions: 2,
		},
	)
	return out
}
