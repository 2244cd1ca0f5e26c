package lockview

import (
	"context"
	"time"

	"github.com/lockctl/lockctl/store"
)

// HandOff is how fast a key passed from one holder to a waiting one
// recently: for each of the latest grants to a caller that had been waiting
// (the event detail has "waited_ms"), the time from the previous lease's
// release to the grant, both from the event log (so it needs the holders to
// log their releases, as lockctl's own commands and the demo do). A release
// that hands the lease to the head of the queue grants it in the same
// transaction, so a queue shows near zero; waiters that retry after a wake-up
// show their retry delay.
type HandOff struct {
	// Median of the gaps; zero when Count is 0.
	Median time.Duration `db:"median"`
	// Count of the grants measured (at most handOffSample).
	Count int64 `db:"count"`
}

// handOffSample bounds the grants a refresh measures.
const handOffSample = 200

// handOffSQL takes the latest grants to waiters of the last $1
// microseconds (newest first by the primary key) and finds, for each, the
// release of the lease it replaced just before it on the same key (the
// key's event index, read backwards from the grant).
const handOffSQL = `
SELECT coalesce(make_interval(secs => percentile_cont(0.5) WITHIN GROUP (ORDER BY extract(epoch FROM g.occurred_at - r.occurred_at))),
                interval '0') AS median,
       count(r.occurred_at) AS count
FROM (SELECT e.event_id, e.lock_key, e.previous_token, e.occurred_at
      FROM distributed_lock_event e
      WHERE e.kind IN ('acquired', 'stolen') AND e.detail ? 'waited_ms'
        AND e.occurred_at > distributed_lock_now() - $1::bigint * interval '1 microsecond'
      ORDER BY e.event_id DESC LIMIT $2) g
CROSS JOIN LATERAL (
      SELECT p.occurred_at FROM distributed_lock_event p
      WHERE p.lock_key = g.lock_key AND p.event_id <= g.event_id AND p.kind = 'released'
        AND p.fence_token = g.previous_token
      ORDER BY p.event_id DESC LIMIT 1) r`

// HandOffLatency measures hand-offs to waiters over the last span.
func HandOffLatency(ctx context.Context, db store.DBTX, span time.Duration) (HandOff, error) {
	h, _, err := maybeOne[HandOff](db.Query(ctx, handOffSQL, span.Microseconds(), handOffSample))
	return h, err
}
