package sqlexec

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"time"

	"github.com/lockstep-queue/lockstep/driver/catalog"
	"github.com/lockstep-queue/lockstep/rowtype"
)

// historyEnd stands for "no end" in a range read: later than any bucket.
var historyEnd = time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC)

// ceilMinute is t rounded up to its minute, in UTC: a bucket is before t
// exactly when it is before ceilMinute(t). Bounds are bound as whole
// minutes, as the buckets are stored: MariaDB compares a DATETIME with a
// fractional time by a full scan, not by a range of the primary key.
func ceilMinute(t time.Time) time.Time {
	b := rowtype.HistoryBucket(t)
	if b.Before(t) {
		b = b.Add(time.Minute)
	}
	return b
}

// HistoryAdd implements driver.Executor: it adds each row's counts to the
// rollup's row of the same (bucket, queue, kind), creating it if need be,
// in one transaction, in ascending primary-key order, so two flushes that
// share rows lock them in the same order and one waits for the other.
func (e *Executor) HistoryAdd(ctx context.Context, rows []rowtype.HistoryRow) error {
	if len(rows) == 0 {
		return nil
	}
	sorted := slices.Clone(rows)
	slices.SortFunc(sorted, CompareHistoryKey)
	st := e.cat().Get(catalog.HistoryAdd)
	err := e.inTx(ctx, func(q Querier) error {
		for _, r := range sorted {
			b := rowtype.HistoryBucket(r.Bucket)
			if _, err := e.exec(ctx, q, st.Name, st.SQL, e.timeArg(b), r.Queue, r.Kind,
				r.Done, r.Failed, r.Retried, r.Cancelled, r.RunMillis,
				r.Done, r.Failed, r.Retried, r.Cancelled, r.RunMillis); err != nil {
				return err
			}
		}
		return nil
	})
	return e.wrap("history: flush", err)
}

// CompareHistoryKey orders history rows by their primary key (bucket,
// queue, kind), the order a flush writes them in.
func CompareHistoryKey(a, b rowtype.HistoryRow) int {
	return cmp.Or(a.Bucket.Compare(b.Bucket), cmp.Compare(a.Queue, b.Queue), cmp.Compare(a.Kind, b.Kind))
}

// HistoryRange implements driver.Executor: the rollup's rows of a time
// range, by primary key, in key order, without locks.
func (e *Executor) HistoryRange(ctx context.Context, p *rowtype.HistoryParams) ([]rowtype.HistoryRow, error) {
	until := p.Until
	if until.IsZero() {
		until = historyEnd
	}
	until = ceilMinute(until)
	rows, err := e.query(ctx, e.q, catalog.HistoryRange, e.cat().Get(catalog.HistoryRange).SQL,
		e.timeArg(rowtype.HistoryBucket(p.Since)), e.timeArg(until), p.Queue, p.Queue, p.Kind, p.Kind)
	if err != nil {
		return nil, e.wrap("history: read", err)
	}
	var out []rowtype.HistoryRow
	for rows.Next() {
		var r rowtype.HistoryRow
		if err := rows.Scan(nullTime{&r.Bucket}, &r.Queue, &r.Kind, &r.Done, &r.Failed, &r.Retried, &r.Cancelled, &r.RunMillis); err != nil {
			rows.Close()
			return nil, e.wrap("history: read", err)
		}
		out = append(out, r)
	}
	if err := errors.Join(rows.Err(), rows.Close()); err != nil {
		return nil, e.wrap("history: read", err)
	}
	return out, nil
}

// HistoryPrune implements driver.Executor: it deletes the oldest rows of
// minutes before before, about max of them: it finds the bucket of the
// max-th oldest (a read of the primary key) and deletes every row up to
// and including that minute by a primary-key range, or, with fewer rows
// left, every row before before. It returns how many it deleted.
func (e *Executor) HistoryPrune(ctx context.Context, before time.Time, max int) (int64, error) {
	if max <= 0 {
		max = 1000
	}
	before = ceilMinute(before)
	end := before
	rows, err := e.query(ctx, e.q, catalog.HistoryPruneBound, e.cat().Get(catalog.HistoryPruneBound).SQL, e.timeArg(before), max-1)
	if err != nil {
		return 0, e.wrap("history: prune", err)
	}
	var bound time.Time
	found := rows.Next()
	if found {
		err = rows.Scan(nullTime{&bound})
	}
	if err := errors.Join(err, rows.Err(), rows.Close()); err != nil {
		return 0, e.wrap("history: prune", err)
	}
	if found {
		if b := rowtype.HistoryBucket(bound).Add(time.Minute); b.Before(end) {
			end = b
		}
	}
	res, err := e.exec(ctx, e.q, catalog.HistoryPrune, e.cat().Get(catalog.HistoryPrune).SQL, e.timeArg(end))
	if err != nil {
		return 0, e.wrap("history: prune", err)
	}
	return res.RowsAffected, nil
}
