package deadlock

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// oldReports are layouts of servers the samples do not cover, written in
// each server's form.
var oldReports = map[string]string{
	// MySQL 5.1: two-part ids, all fields of a record on one line, no
	// HOLDS for (1), the table as `db/t`.
	"mysql51": `LATEST DETECTED DEADLOCK
------------------------
110105 10:04:23
*** (1) TRANSACTION:
TRANSACTION 0 1286, ACTIVE 5 sec, process no 2134, OS thread id 1158 starting index read
mysql tables in use 1, locked 1
LOCK WAIT 2 lock struct(s), heap size 368, 1 row lock(s)
MySQL thread id 4, query id 43 localhost root Updating
update t set v = 1 where id = 2
*** (1) WAITING FOR THIS LOCK TO BE GRANTED:
RECORD LOCKS space id 0 page no 52 n bits 72 index ` + "`PRIMARY`" + ` of table ` + "`test/t`" + ` trx id 0 1286 lock_mode X locks rec but not gap waiting
Record lock, heap no 3 PHYSICAL RECORD: n_fields 4; compact format; info bits 0
 0: len 4; hex 80000002; asc     ;; 1: len 6; hex 000000000505; asc       ;; 2: len 7; hex 00000000320110; asc     2  ;; 3: len 4; hex 80000000; asc     ;;

*** (2) TRANSACTION:
TRANSACTION 0 1285, ACTIVE 9 sec, process no 2134, OS thread id 1157 starting index read
mysql tables in use 1, locked 1
3 lock struct(s), heap size 368, 2 row lock(s)
MySQL thread id 3, query id 44 localhost root Updating
update t set v = 1 where id = 1
*** (2) HOLDS THE LOCK(S):
RECORD LOCKS space id 0 page no 52 n bits 72 index ` + "`PRIMARY`" + ` of table ` + "`test/t`" + ` trx id 0 1285 lock_mode X locks rec but not gap
Record lock, heap no 3 PHYSICAL RECORD: n_fields 4; compact format; info bits 0
 0: len 4; hex 80000002; asc     ;; 1: len 6; hex 000000000505; asc       ;; 2: len 7; hex 00000000320110; asc     2  ;; 3: len 4; hex 80000000; asc     ;;

*** (2) WAITING FOR THIS LOCK TO BE GRANTED:
RECORD LOCKS space id 0 page no 52 n bits 72 index ` + "`PRIMARY`" + ` of table ` + "`test/t`" + ` trx id 0 1285 lock_mode X locks rec but not gap waiting
Record lock, heap no 2 PHYSICAL RECORD: n_fields 4; compact format; info bits 0
 0: len 4; hex 80000001; asc     ;; 1: len 6; hex 000000000506; asc       ;; 2: len 7; hex 00000000320110; asc     2  ;; 3: len 4; hex 80000000; asc     ;;

*** WE ROLL BACK TRANSACTION (1)
`,
	// MySQL 5.6 error log: "InnoDB: transactions deadlock detected"
	// lower case, the TOO DEEP form with its unnumbered TRANSACTION.
	"toodeep56": `2014-01-02 03:04:05 7f1c2a3b4700InnoDB: transactions deadlock detected, dumping detailed information.
2014-01-02 03:04:05 7f1c2a3b4700
TOO DEEP OR LONG SEARCH IN THE LOCK TABLE WAITS-FOR GRAPH, WE WILL ROLL BACK FOLLOWING TRANSACTION

*** TRANSACTION:
TRANSACTION 3BF88F886, ACTIVE 1 sec setting auto-inc lock
mysql tables in use 1, locked 1
LOCK WAIT 2 lock struct(s), heap size 360, 0 row lock(s)
MySQL thread id 9, OS thread handle 0x7f1c, query id 10 localhost root update
INSERT INTO log (msg) VALUES ('x')
*** WAITING FOR THIS LOCK TO BE GRANTED:
TABLE LOCK table ` + "`db`.`log`" + ` trx id 3BF88F886 lock mode AUTO-INC waiting
`,
	// MariaDB 10.11 error log with a one-digit hour and "(0)".
	"mariadb-roll-back-0": `2024-01-02  3:04:05 140234 [Note] InnoDB: Transactions deadlock detected, dumping detailed information.
2024-01-02  3:04:05 140234 [Note] InnoDB: 
*** (1) TRANSACTION:

TRANSACTION 77, ACTIVE 0 sec starting index read
MariaDB thread id 5, OS thread handle 1, query id 9 localhost root Updating
UPDATE t SET v=1 WHERE id=1
2024-01-02  3:04:05 140234 [Note] InnoDB: *** WAITING FOR THIS LOCK TO BE GRANTED:

RECORD LOCKS space id 5 page no 3 n bits 8 index PRIMARY of table ` + "`d`.`t`" + ` trx id 77 lock_mode X locks rec but not gap waiting
Record lock, heap no 2 PHYSICAL RECORD: n_fields 4; compact format; info bits 32
 0: len 4; hex 00000001; asc     ;;
 1: len 6; hex 00000000004e; asc      N;;
 2: len 7; hex 00000000000000; asc        ;;
 3: len 1; hex 21; asc !;;

2024-01-02  3:04:05 140234 [Note] InnoDB: *** CONFLICTING WITH:

RECORD LOCKS space id 5 page no 3 n bits 8 index PRIMARY of table ` + "`d`.`t`" + ` trx id 78 lock_mode X locks rec but not gap
Record lock, heap no 2

2024-01-02  3:04:05 140234 [Note] InnoDB: *** WE ROLL BACK TRANSACTION (0)
`,
}

func TestOldForms(t *testing.T) {
	rs, err := ParseString(oldReports["mysql51"])
	require.NoError(t, err)
	r := rs[0]
	require.EqualValues(t, 1286, r.Transaction(1).TrxID)
	require.EqualValues(t, 1285, r.Transaction(2).TrxID)
	require.Equal(t, "test.t", r.Transaction(1).Waits.Table)
	require.Equal(t, []string{"2"}, r.Transaction(1).Waits.Records[0].KeyValues())
	require.Equal(t, "DB_TRX_ID", r.Transaction(1).Waits.Records[0].Fields[1].Name)
	// (1)'s hold is inferred from (2)'s wait.
	h := r.Transaction(1).Holds[0]
	require.True(t, h.Inferred)
	require.Equal(t, []string{"1"}, h.Records[0].KeyValues())
	require.Equal(t, PatternOppositeRowOrder, r.PatternName())
	require.Equal(t, "(1) → (2) → (1)", r.CycleString())

	rs, err = ParseString(oldReports["toodeep56"])
	require.NoError(t, err)
	r = rs[0]
	require.True(t, r.TooDeep)
	require.Equal(t, 1, r.Victim)
	require.EqualValues(t, 0x3BF88F886, r.Transaction(1).TrxID)
	require.Equal(t, "AUTO-INC", r.Transaction(1).Waits.Mode)
	require.Equal(t, PatternTooDeep, r.PatternName())
	require.Equal(t, "2014-01-02 03:04:05", r.Time)

	rs, err = ParseString(oldReports["mariadb-roll-back-0"])
	require.NoError(t, err)
	r = rs[0]
	require.Equal(t, FormatMariaDB, r.Format)
	require.Zero(t, r.Victim)
	rec := r.Transaction(1).Waits.Records[0]
	require.True(t, rec.Deleted)
	require.Contains(t, rec.String(), "[delete-marked]")
	require.Equal(t, "1", rec.Fields[0].Value, "INT UNSIGNED 1, not -2147483647")
	require.Equal(t, "33", rec.Fields[3].Value, "a 1-byte field is a number first")
	require.Contains(t, rec.Fields[3].Note, "ASCII '!'")
}

// Each type from a schema: the record's bytes as MySQL 8 stores them.
func TestTypedKeys(t *testing.T) {
	sc, err := ParseSchema("CREATE TABLE `d`.`k` (\n" +
		"  `id` bigint unsigned NOT NULL AUTO_INCREMENT COMMENT 'the id, (sic)',\n" +
		"  `code` char(8) CHARACTER SET latin1 NOT NULL,\n" +
		"  `at` datetime(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6),\n" +
		"  `flag` tinyint NOT NULL,\n" +
		"  `day` date DEFAULT NULL,\n" +
		"  `amount` decimal(10,2) NOT NULL,\n" +
		"  `ts` timestamp(3) NULL,\n" +
		"  `tm` time NOT NULL,\n" +
		"  `raw` varbinary(4) NOT NULL,\n" +
		"  `st` enum('new','done') NOT NULL,\n" +
		"  PRIMARY KEY (`id`),\n" +
		"  KEY `idx_all` (`code`,`at`,`flag`,`day`,`amount`,`ts`,`tm`,`raw`,`st`)\n" +
		") ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 /* partition by nothing */;\n")
	require.NoError(t, err)
	hexes := []string{"41422020", "99b244a8c501e240", "81", "8fd022", "800000010f", "65956a2507d0", "800000", "dead", "02", "000000000001f7fe"}
	fs := make([]Field, len(hexes))
	for i, h := range hexes {
		fs[i] = Field{Pos: i, Hex: h, Len: len(h) / 2}
	}
	rec := &Record{HeapNo: 2, Fields: fs}
	tab, _ := sc.LookupTable("d.k")
	lay, _, ok := tab.layout("idx_all")
	require.True(t, ok)
	decodeRecord("idx_all", rec, lay, len(lay), literals{})
	require.Equal(t, []string{"AB", "2024-01-02 10:35:05.123456", "1", "2024-01-02", "1.15", "2024-01-03 14:07:33.200", "00:00:00", "0xdead", "done", "129022"}, rec.KeyValues())
	require.Equal(t, []string{"code", "at", "flag", "day", "amount", "ts", "tm", "raw", "st", "id"}, names(rec))

	// A junk schema is not a panic, and says what it wanted.
	for _, junk := range []string{"", "CREATE TABLE", "CREATE TABLE t (", "CREATE TABLE `t` (a int, PRIMARY KEY (", "create table x ((((", "CREATE TABLE t (KEY (a(3)), a enum('x'"} {
		_, _ = ParseSchema(junk)
	}
	_, err = ParseSchema("SELECT 1")
	require.ErrorContains(t, err, "no CREATE TABLE")
}

func names(r *Record) []string {
	var out []string
	for _, f := range r.Fields {
		out = append(out, f.Name)
	}
	return out
}
