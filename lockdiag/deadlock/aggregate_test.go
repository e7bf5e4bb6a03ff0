package deadlock

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// Every timestamp form a report carries orders the same way, so a group's
// first and last seen are right whichever server wrote the log.
func TestGroupTimes(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"2024-01-02T03:04:05.123456Z", "2024-01-02 03:04:05.123456 +00:00"},
		{"2024-01-02T11:04:05.123456+08:00", "2024-01-02 11:04:05.123456 +08:00"},
		{"2024-01-02  3:04:05", "2024-01-02 03:04:05"},
		{"2024-01-02 3:04:05", "2024-01-02 03:04:05"},
		{"2014-01-02 03:04:05", "2014-01-02 03:04:05"},
		{"131107 11:13:20", "2013-11-07 11:13:20"},
	} {
		ts, ok := parseTime(c.in)
		require.True(t, ok, c.in)
		require.Equal(t, c.want, formatTime(ts, c.in), c.in)
	}
	_, ok := parseTime("yesterday")
	require.False(t, ok)

	mk := func(ts string, q string) *Report {
		return &Report{Time: ts, Victim: 1, Transactions: []*Transaction{{Number: 1, Query: q, Waits: &Lock{Table: "d.t", Index: "PRIMARY", Mode: "X", Kind: RecNotGap}}}}
	}
	gs := Aggregate([]*Report{
		mk("2024-01-02T03:04:05Z", "UPDATE t SET a = -1 WHERE id = 5"),
		mk("2024-01-01T23:00:00-05:00", "UPDATE t SET a = 2 WHERE id = -7"), // 04:00Z, the latest
		mk("2024-01-02T01:00:00+00:00", "UPDATE  t SET a = 3 WHERE id = 9"),
	})
	require.Len(t, gs, 1, "negative and positive literals shape alike")
	require.Equal(t, 3, gs[0].Count)
	require.Equal(t, "2024-01-02 01:00:00 +00:00", gs[0].First)
	require.Equal(t, "2024-01-01 23:00:00 -05:00", gs[0].Last)
	require.Equal(t, []string{"UPDATE t SET a = ? WHERE id = ?"}, gs[0].Statements)
}
