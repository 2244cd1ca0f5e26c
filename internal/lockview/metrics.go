package lockview

import (
	"context"
	"time"

	"github.com/lockctl/lockctl/store"
)

// Gauges is the state of the lock table that the metrics endpoint reports
// on each scrape, read with one clock reading.
type Gauges struct {
	// By state, as `ls` shows them: Held excludes Expiring, and Expired
	// and Free exclude Delayed (which counts kept keys too: nobody is
	// granted them until a point), so the five add up to every row.
	Held     int64 `db:"held"`
	Expiring int64 `db:"expiring"`
	Expired  int64 `db:"expired"`
	Delayed  int64 `db:"delayed"`
	Free     int64 `db:"free"`
	// OldestHeld is how long the longest-held live lease has been held
	// (since its grant, renewals included); 0 without live leases.
	OldestHeld time.Duration `db:"oldest_held"`
	// Waiters counts live waiter records, on WaitedKeys keys; LongestWait is
	// how long the longest of them has waited (0 without waiters).
	Waiters     int64         `db:"waiters"`
	WaitedKeys  int64         `db:"waited_keys"`
	LongestWait time.Duration `db:"longest_wait"`
}

// gaugesSQL counts the keys by state, as the readers' view shows them
// (distributed_lock_state; a key in its lock-delay counts as delayed only),
// and reads the oldest live grant and the longest wait, at one reading of
// the clock: the view's, or the waiter table's own when there is no key.
const gaugesSQL = `
WITH s AS (SELECT l.state, l.acquired_at, l.db_now FROM distributed_lock_state l OFFSET 0),
c AS (SELECT coalesce((SELECT max(s.db_now) FROM s), distributed_lock_now()) AS ts),
w AS (
    SELECT count(*) AS n, count(DISTINCT w.lock_key) AS keys, min(w.waiting_since) AS since
    FROM distributed_lock_waiter w WHERE w.seen_until > (SELECT ts FROM c))
SELECT
    count(s.state) FILTER (WHERE s.state = 'held') AS held,
    count(s.state) FILTER (WHERE s.state = 'expiring') AS expiring,
    count(s.state) FILTER (WHERE s.state = 'expired') AS expired,
    count(s.state) FILTER (WHERE s.state IN ('delayed', 'kept')) AS delayed,
    count(s.state) FILTER (WHERE s.state = 'free') AS free,
    coalesce(max(c.ts - s.acquired_at) FILTER (WHERE s.state IN ('held', 'expiring')), interval '0') AS oldest_held,
    (SELECT n FROM w) AS waiters,
    (SELECT keys FROM w) AS waited_keys,
    coalesce(c.ts - (SELECT since FROM w), interval '0') AS longest_wait
FROM c LEFT JOIN s ON true
GROUP BY c.ts`

// ReadGauges reads Gauges in one pass over the lock table (and the small
// waiter table).
func ReadGauges(ctx context.Context, db store.DBTX) (Gauges, error) {
	g, _, err := maybeOne[Gauges](db.Query(ctx, gaugesSQL))
	return g, err
}

// KeyWaiters is one key's live waiters.
type KeyWaiters struct {
	Key         string        `db:"lock_key"`
	Waiters     int64         `db:"waiters"`
	LongestWait time.Duration `db:"longest_wait"`
}

const topWaitedSQL = `
SELECT w.lock_key, count(*) AS waiters, distributed_lock_now() - min(w.waiting_since) AS longest_wait
FROM distributed_lock_waiter w
WHERE w.seen_until > distributed_lock_now()
GROUP BY w.lock_key
ORDER BY count(*) DESC, min(w.waiting_since), w.lock_key
LIMIT $1`

// TopWaited returns the n keys with the most live waiters (ties: longest
// wait first, then key).
func TopWaited(ctx context.Context, db store.DBTX, n int) ([]KeyWaiters, error) {
	return collect[KeyWaiters](db.Query(ctx, topWaitedSQL, n))
}

// EventCounts is how many events of each kind occurred in a span of time.
type EventCounts struct {
	// Through is the end of the span (database clock): the next span starts
	// after it, so consecutive spans neither overlap nor leave gaps.
	Through time.Time
	ByKind  map[string]int64
}

type eventCountRow struct {
	Through time.Time `db:"through"`
	Kind    *string   `db:"kind"`
	N       int64     `db:"n"`
}

// eventCountsSQL counts events by kind with occurred_at in ($1, now - $2]
// ($1 NULL: from the start of the log). The BRIN index on occurred_at
// serves the range. The left join returns the span's end even when no
// event falls in it.
const eventCountsSQL = `
WITH c AS (SELECT distributed_lock_now() - $2::bigint * interval '1 microsecond' AS through)
SELECT c.through, e.kind, count(e.event_id) AS n
FROM c LEFT JOIN distributed_lock_event e
    ON e.occurred_at <= c.through AND ($1::timestamptz IS NULL OR e.occurred_at > $1::timestamptz)
GROUP BY c.through, e.kind`

// CountEvents counts events by kind that occurred after after (the zero
// time: from the start of the log) and at least settle before now. Counting
// a span only once settle has passed gives an event's transaction that long
// to commit: one that commits later, into a span already counted, is never
// counted.
func CountEvents(ctx context.Context, db store.DBTX, after time.Time, settle time.Duration) (EventCounts, error) {
	var from any
	if !after.IsZero() {
		from = after
	}
	rows, err := collect[eventCountRow](db.Query(ctx, eventCountsSQL, from, settle.Microseconds()))
	if err != nil {
		return EventCounts{}, err
	}
	out := EventCounts{ByKind: map[string]int64{}}
	for _, r := range rows {
		out.Through = r.Through
		if r.Kind != nil {
			out.ByKind[*r.Kind] = r.N
		}
	}
	return out, nil
}
