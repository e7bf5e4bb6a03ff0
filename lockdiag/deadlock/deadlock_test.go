package deadlock

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func parseFile(t *testing.T, name string) []*Report {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	require.NoError(t, err)
	rs, err := ParseString(string(b))
	require.NoError(t, err)
	return rs
}

func values(r *Record) []string { return r.Values() }

// The claim/cancel deadlock report from the published MySQL 8.4
// measurements, copied as printed, with the author's "(생략)" elisions.
func TestMySQL84Report(t *testing.T) {
	rs := parseFile(t, "claim_cancel_mysql84.txt")
	require.Len(t, rs, 1)
	checkMySQL84Report(t, rs[0])
}

func checkMySQL84Report(t *testing.T, r *Report) {
	t.Helper()
	require.Equal(t, FormatMySQL, r.Format)
	require.Len(t, r.Transactions, 2)
	require.Equal(t, 2, r.Victim)

	cancel := r.Transaction(1)
	require.EqualValues(t, 4254804, cancel.TrxID)
	require.Equal(t, "UPDATE attempt SET status='CANCELLED' WHERE run_id=3 AND status IN ('PENDING','RUNNING')", cancel.Query)
	require.Equal(t, 12, cancel.RowLocks)
	require.Equal(t, 5, cancel.LockStructs)
	require.Equal(t, "fetching rows", cancel.State)
	require.Len(t, cancel.Holds, 1)
	h := cancel.Holds[0]
	require.Equal(t, "idx_status", h.Index)
	require.Equal(t, "lab.attempt", h.Table)
	require.Equal(t, "X", h.Mode)
	require.Equal(t, NextKey, h.Kind)
	// The published report elides the records for 100, 199, 200 and 299:
	// what is printed is ('PENDING', 99) at heap 424 and ('PENDING', 300)
	// at 429.
	require.Len(t, h.Records, 2)
	require.EqualValues(t, 424, h.Records[0].HeapNo)
	require.Equal(t, []string{"'PENDING'", "99"}, values(h.Records[0]))
	require.EqualValues(t, 429, h.Records[1].HeapNo)
	require.Equal(t, []string{"'PENDING'", "300"}, values(h.Records[1]))
	require.Equal(t, "string", h.Records[1].Fields[0].Type)
	require.Equal(t, "int", h.Records[1].Fields[1].Type)

	w := cancel.Waits
	require.Equal(t, "PRIMARY", w.Index)
	require.Equal(t, RecNotGap, w.Kind)
	require.True(t, w.Waiting)
	require.Len(t, w.Records, 1)
	require.EqualValues(t, 109, w.Records[0].HeapNo)
	require.Equal(t, []string{"300"}, values(w.Records[0]))

	claim := r.Transaction(2)
	require.EqualValues(t, 4254803, claim.TrxID)
	require.Equal(t, "UPDATE attempt SET status='RUNNING' WHERE id=300 AND status='PENDING'", claim.Query)
	require.Equal(t, 1, claim.UndoEntries)
	require.Len(t, claim.Holds, 1)
	require.Equal(t, "PRIMARY", claim.Holds[0].Index)
	require.Equal(t, RecNotGap, claim.Holds[0].Kind)
	require.Equal(t, []string{"300"}, values(claim.Holds[0].Records[0]))
	require.Equal(t, "idx_status", claim.Waits.Index)
	require.Equal(t, RecNotGap, claim.Waits.Kind)
	require.Equal(t, []string{"'PENDING'", "300"}, values(claim.Waits.Records[0]))

	p := r.Pattern
	require.NotNil(t, p)
	require.Equal(t, PatternOppositeIndexOrder, p.Name)
	require.Equal(t, "idx_status", p.Secondary)
	require.Equal(t, 1, p.SecondaryFirst)
	require.Equal(t, 2, p.PrimaryFirst)
	require.Equal(t, "300", p.Row)
	require.False(t, p.ByID)
	require.Contains(t, p.Explanation, "found its rows through the secondary index idx_status (its WHERE tests a column idx_status is named after)")
	require.Contains(t, p.Explanation, "because it changes a column of idx_status (it sets status)")
	require.Contains(t, p.Fix, "non-locking SELECT")
	require.Contains(t, p.Fix, "ascending id order")
}

// The same report inside SHOW ENGINE INNODB STATUS, as printed by a
// client and as the mysql client's batch mode escapes it.
func TestStatusOutput(t *testing.T) {
	for _, name := range []string{"status_mysql84.txt", "status_mysql84_escaped.txt"} {
		t.Run(name, func(t *testing.T) {
			rs := parseFile(t, name)
			require.Len(t, rs, 1)
			require.Equal(t, "2026-11-30 05:59:58", rs[0].Time)
			checkMySQL84Report(t, rs[0])
		})
	}
}

type sampleWant struct {
	file            string
	victim          int
	trx             [2]uint64
	thread          [2]uint64
	stmt            [2]string // prefixes
	waitIndex       [2]string
	waitKey         [2]string
	holdIndex       [2]string
	secondary       string
	secondaryFirst  int
	byID            bool
	row             string
	rowLocksOfFirst int
}

// Every MariaDB sample is the opposite-order pattern on one row: one
// transaction holds a secondary index record and waits for PRIMARY, the
// other holds PRIMARY and waits for that record. They differ in which
// statement took the secondary index.
func TestMariaDBSamples(t *testing.T) {
	claim, cancel := "UPDATE attempt FORCE INDEX(PRIMARY) SET status='RUNNING' WHERE id=", "UPDATE attempt FORCE INDEX("
	for _, w := range []sampleWant{
		{file: "sample_deadlock_force_status_claimpk.txt", victim: 1, trx: [2]uint64{4400987, 4400990}, thread: [2]uint64{292, 295},
			stmt:      [2]string{claim + "262", cancel + "idx_status) SET status='CANCELLED' WHERE run_id=3"},
			waitIndex: [2]string{"idx_status", "PRIMARY"}, waitKey: [2]string{"('PENDING', 262)", "262"}, holdIndex: [2]string{"PRIMARY", "idx_status"},
			secondary: "idx_status", secondaryFirst: 2, row: "262", rowLocksOfFirst: 2},
		{file: "sample_deadlock_composite_claimpk.txt", victim: 1, trx: [2]uint64{6026310, 6026313}, thread: [2]uint64{315, 317},
			stmt:      [2]string{claim + "202", cancel + "idx_run_status) SET status='CANCELLED'"},
			waitIndex: [2]string{"idx_run_status", "PRIMARY"}, waitKey: [2]string{"(3, 'PENDING', 202)", "202"}, holdIndex: [2]string{"PRIMARY", "idx_run_status"},
			secondary: "idx_run_status", secondaryFirst: 2, row: "202", rowLocksOfFirst: 2},
		{file: "sample_deadlock_composite_defaultclaim.txt", victim: 2, trx: [2]uint64{1883261, 1883262}, thread: [2]uint64{262, 257},
			stmt:      [2]string{cancel + "idx_run_status) SET status='CANCELLED'", "UPDATE attempt SET status='RUNNING' WHERE id=262"},
			waitIndex: [2]string{"idx_status", "PRIMARY"}, waitKey: [2]string{"('PENDING', 262)", "262"}, holdIndex: [2]string{"PRIMARY", "idx_status"},
			secondary: "idx_status", secondaryFirst: 2, byID: true, row: "262", rowLocksOfFirst: 211},
		{file: "sample_deadlock_force_run_defaultclaim.txt", victim: 2, trx: [2]uint64{1075963, 1075979}, thread: [2]uint64{252, 250},
			stmt:      [2]string{cancel + "idx_run) SET status='CANCELLED'", "UPDATE attempt SET status='RUNNING' WHERE id=271"},
			waitIndex: [2]string{"idx_status", "PRIMARY"}, waitKey: [2]string{"('PENDING', 271)", "271"}, holdIndex: [2]string{"PRIMARY", "idx_status"},
			secondary: "idx_status", secondaryFirst: 2, byID: true, row: "271", rowLocksOfFirst: 144},
		{file: "sample_deadlock_ids_then_pk_defaultclaim.txt", victim: 2, trx: [2]uint64{2727562, 2727582}, thread: [2]uint64{275, 274},
			stmt:      [2]string{"UPDATE attempt SET status='CANCELLED' WHERE id=205", "UPDATE attempt SET status='RUNNING' WHERE id=205"},
			waitIndex: [2]string{"idx_status", "PRIMARY"}, waitKey: [2]string{"('PENDING', 205)", "205"}, holdIndex: [2]string{"PRIMARY", "idx_status"},
			secondary: "idx_status", secondaryFirst: 2, byID: true, row: "205", rowLocksOfFirst: 6},
	} {
		t.Run(w.file, func(t *testing.T) {
			rs := parseFile(t, w.file)
			require.Len(t, rs, 1)
			r := rs[0]
			require.Equal(t, FormatMariaDB, r.Format)
			require.Equal(t, w.victim, r.Victim)
			require.Len(t, r.Transactions, 2)
			for i, tx := range r.Transactions {
				require.Equal(t, i+1, tx.Number)
				require.Equal(t, w.trx[i], tx.TrxID)
				require.Equal(t, w.thread[i], tx.ThreadID)
				require.True(t, strings.HasPrefix(tx.Query, w.stmt[i]), tx.Query)
				require.Equal(t, w.waitIndex[i], tx.Waits.Index)
				require.Equal(t, RecNotGap, tx.Waits.Kind)
				require.Equal(t, "X", tx.Waits.Mode)
				require.Len(t, tx.Waits.Records, 1)
				require.Equal(t, w.waitKey[i], tx.Waits.Records[0].Key())
				// What it holds is derived from the other's CONFLICTING
				// WITH: only the record with the waited-for heap number.
				require.Len(t, tx.Holds, 1)
				h := tx.Holds[0]
				require.True(t, h.Inferred)
				require.Equal(t, w.holdIndex[i], h.Index)
				require.Len(t, h.Records, 1)
				other := r.Transactions[1-i]
				require.Equal(t, other.Waits.Records[0].HeapNo, h.Records[0].HeapNo)
				require.Equal(t, other.Waits.Records[0].Key(), h.Records[0].Key())
			}
			require.Equal(t, w.rowLocksOfFirst, r.Transactions[0].RowLocks)
			p := r.Pattern
			require.NotNil(t, p)
			require.Equal(t, w.secondary, p.Secondary)
			require.Equal(t, w.secondaryFirst, p.SecondaryFirst)
			require.Equal(t, 3-w.secondaryFirst, p.PrimaryFirst)
			require.Equal(t, w.row, p.Row)
			require.Equal(t, w.byID, p.ByID)
			if w.byID {
				require.Contains(t, p.Fix, "FORCE INDEX(PRIMARY)")
			} else {
				require.Contains(t, p.Fix, "non-locking SELECT")
			}
		})
	}
}

func TestMariaDBHeldRecordDetails(t *testing.T) {
	// The canceller's CONFLICTING WITH prints heap 307 and 308 without
	// fields; the blocking one is 308, whose fields are the waiter's.
	r := parseFile(t, "sample_deadlock_composite_claimpk.txt")[0]
	c := r.Transaction(2)
	require.Len(t, c.Conflicts, 1)
	require.Len(t, c.Holds[0].Records, 1)
	require.EqualValues(t, 308, c.Holds[0].Records[0].HeapNo)
	require.Equal(t, NextKey, c.Holds[0].Kind)
	require.Equal(t, []string{"3", "'PENDING'", "202"}, values(c.Holds[0].Records[0]))

	// A clustered record: key, DB_TRX_ID, DB_ROLL_PTR, run_id, status.
	pk := r.Transaction(2).Waits.Records[0]
	require.Equal(t, []string{"202", "6026310", "0x2b000001950110", "3", "'RUNNING'"}, values(pk))
	require.Equal(t, "DB_TRX_ID", pk.Fields[1].Name)
	require.Equal(t, "DB_ROLL_PTR", pk.Fields[2].Name)

	// force_status: the canceller's bitmap has 65 records; only heap 603
	// (id 262) blocks the claim.
	r = parseFile(t, "sample_deadlock_force_status_claimpk.txt")[0]
	require.Len(t, r.Transaction(1).Conflicts[0].Records, 65)
	require.Equal(t, []string{"'PENDING'", "262"}, values(r.Transaction(2).Holds[0].Records[0]))
}

func TestErrorLogAggregate(t *testing.T) {
	rs := parseFile(t, "errorlog_mariadb.txt")
	require.Len(t, rs, 8)
	for _, r := range rs {
		require.NotNil(t, r.Pattern, "report at line %d", r.Line)
		require.NotEmpty(t, r.Time)
	}
	require.Equal(t, "2026-11-30  6:27:27", rs[0].Time)
	gs := Aggregate(rs)
	require.Len(t, gs, 5)
	type row struct {
		count   int
		indexes string
		stmts   string
	}
	var got []row
	for _, g := range gs {
		require.Equal(t, "research.attempt", g.Table)
		require.Equal(t, PatternOppositeIndexOrder, g.Pattern)
		got = append(got, row{g.Count, strings.Join(g.Indexes, ","), strings.Join(g.Statements, " | ")})
	}
	require.Equal(t, []row{
		{3, "PRIMARY,idx_status", "UPDATE attempt FORCE INDEX(PRIMARY) SET status=? WHERE id=? AND status=? | UPDATE attempt FORCE INDEX(idx_status) SET status=? WHERE run_id=? AND status IN (?+)"},
		{2, "PRIMARY,idx_status", "UPDATE attempt FORCE INDEX(idx_run) SET status=? WHERE run_id=? AND status IN (?+) | UPDATE attempt SET status=? WHERE id=? AND status=?"},
		{1, "PRIMARY,idx_run_status", "UPDATE attempt FORCE INDEX(PRIMARY) SET status=? WHERE id=? AND status=? | UPDATE attempt FORCE INDEX(idx_run_status) SET status=? WHERE run_id=? AND status IN (?+)"},
		{1, "PRIMARY,idx_status", "UPDATE attempt SET status=? WHERE id=? AND status IN (?+) | UPDATE attempt SET status=? WHERE id=? AND status=?"},
		{1, "PRIMARY,idx_status", "UPDATE attempt FORCE INDEX(idx_run_status) SET status=? WHERE run_id=? AND status IN (?+) | UPDATE attempt SET status=? WHERE id=? AND status=?"},
	}, got)
	// The claim was the victim in all three force_status deadlocks.
	require.Equal(t, map[string]int{"UPDATE attempt FORCE INDEX(PRIMARY) SET status=? WHERE id=? AND status=?": 3}, gs[0].Victims)
}

// Without a schema: the top bit set is a signed column's small positive
// number; clear, an unsigned one (most ids). The old decoder read
// 0x7fffffffffffffff as -1 and 0x7ffffffe as -2: a sign flip of unsigned
// ids.
func TestInferValue(t *testing.T) {
	for _, c := range []struct {
		hex, typ, val string
		n             int
	}{
		{"800000000000012c", "int", "300", 8},
		{"8000000000000063", "int", "99", 8},
		{"000000000001f7fe", "uint", "129022", 8},
		{"7fffffffffffffff", "uint", "9223372036854775807", 8},
		{"80000003", "int", "3", 4},
		{"7ffffffe", "uint", "2147483646", 4},
		{"81", "int", "1", 1},
		{"21", "uint", "33", 1},
		{"50454e44494e47", "string", "'PENDING'", 7},
		{"eab080", "string", "'가'", 3},
		{"", "string", "''", 0},
		{"00000043275b", "uint", "4400987", 6},
		{"41424344", "string", "'ABCD'", 4},
		{"99b244a8c5", "datetime", "2024-01-02 10:35:05", 5},
	} {
		f := Field{Hex: c.hex, Len: c.n}
		inferField(&f, literals{})
		require.Equal(t, c.typ, f.Type, c.hex)
		require.Equal(t, c.val, f.Value, c.hex)
	}
}

func TestMalformed(t *testing.T) {
	report, err := os.ReadFile("testdata/claim_cancel_mysql84.txt")
	require.NoError(t, err)
	s := string(report)
	head, _, ok := strings.Cut(s, "*** WE ROLL BACK")
	require.True(t, ok)
	for name, c := range map[string]struct{ in, msg string }{
		"empty":      {"", "no deadlock report"},
		"status":     {"=====\nINNODB MONITOR OUTPUT\n-----\nTRANSACTIONS\n", "no deadlock report"},
		"no trx":     {"LATEST DETECTED DEADLOCK\n------\n", "has no transactions"},
		"bad lock":   {strings.Replace(s, "page no 13 n bits", "page no x n bits", 1), "line 9: expected a whole RECORD LOCKS"},
		"bad field":  {strings.Replace(s, "hex 8000000000000063", "hex 800000000000006", 1), "odd number of hex digits"},
		"bad victim": {strings.Replace(s, "TRANSACTION (2)", "TRANSACTION (7)", 1), "rolled-back transaction (7)"},
		"orphan field": {"*** (1) TRANSACTION:\nTRANSACTION 1, ACTIVE 0 sec\n*** (1) WAITING FOR THIS LOCK TO BE GRANTED:\n 0: len 1; hex 81; asc  ;;\n*** WE ROLL BACK TRANSACTION (1)\n",
			"\"Record lock, heap no N\" line before"},
	} {
		t.Run(name, func(t *testing.T) {
			rs, err := ParseString(c.in)
			require.Error(t, err)
			require.Contains(t, err.Error(), c.msg)
			require.Empty(t, rs)
		})
	}
	// A report cut off (at its end or mid-line) decodes what is there,
	// with one warning; the old decoder dropped it.
	for name, in := range map[string]string{"truncated": head, "cut mid-line": s[:len(s)/2]} {
		rs, err := ParseString(in)
		require.NoError(t, err, name)
		require.Len(t, rs, 1, name)
		require.True(t, rs[0].Truncated, name)
		require.Len(t, rs[0].Warnings, 1, name)
		require.Zero(t, rs[0].Victim, name)
	}
	// One bad report in a log does not lose the good ones.
	rs, err := ParseString(s + "\n" + strings.Replace(s, "page no 13 n bits", "page no x n bits", 1) + "\n" + s)
	require.Error(t, err)
	require.Len(t, rs, 2)
}

func TestShape(t *testing.T) {
	require.Equal(t, "UPDATE t SET a=? WHERE id IN (?+) AND b=? AND c=?",
		Shape("UPDATE  t SET a='x''y'\n WHERE id IN (1, 2,3) AND b=-4.5 AND c=0x1F"))
}

func FuzzParse(f *testing.F) {
	for _, name := range []string{"claim_cancel_mysql84.txt", "sample_deadlock_composite_claimpk.txt", "sample_deadlock_ids_then_pk_defaultclaim.txt"} {
		b, err := os.ReadFile(filepath.Join("testdata", name))
		require.NoError(f, err)
		f.Add(string(b))
		for _, in := range pasteForms(string(b)) {
			f.Add(in)
		}
	}
	for _, in := range oldReports {
		f.Add(in)
	}
	f.Fuzz(func(t *testing.T, s string) {
		rs, err := ParseString(s)
		if err == nil && len(rs) == 0 {
			t.Fatal("no reports and no error")
		}
		gs := Aggregate(rs)
		var sb strings.Builder
		for _, r := range rs {
			if r.Victim != 0 && r.Transaction(r.Victim) == nil {
				t.Fatalf("victim (%d) not among the transactions", r.Victim)
			}
			if err := r.WriteText(&sb); err != nil {
				t.Fatal(err)
			}
		}
		if err := WriteAggregate(&sb, len(rs), gs); err != nil {
			t.Fatal(err)
		}
	})
}

// FuzzParseSchema: no CREATE TABLE text makes the schema reader panic or
// hang, and whatever it reads decodes a report.
func FuzzParseSchema(f *testing.F) {
	f.Add("CREATE TABLE `d`.`t` (`id` bigint unsigned NOT NULL, `c` char(3), `at` datetime(6), PRIMARY KEY (`id`), KEY `ix` (`c`(2), `at`)) ENGINE=InnoDB;")
	f.Add("| t | CREATE TABLE `t` (\\n  `id` int NOT NULL,\\n  UNIQUE KEY (`id`)\\n) |")
	f.Add("CREATE TABLE c (id INT PRIMARY KEY, p INT REFERENCES p(id), v DECIMAL(65,30), e ENUM('a','b') /* x */ -- y\n)")
	b, err := os.ReadFile(filepath.Join("testdata", "claim_cancel_mysql84.txt"))
	require.NoError(f, err)
	f.Fuzz(func(t *testing.T, s string) {
		sc, err := ParseSchema(s)
		if err != nil {
			return
		}
		for _, tab := range sc.Tables {
			for _, ix := range tab.Indexes {
				_, _, _ = tab.layout(ix.Name)
			}
		}
		if _, err := Decode(string(b), Options{Schema: sc}); err != nil {
			t.Fatal(err)
		}
	})
}
