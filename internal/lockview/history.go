package lockview

import (
	"context"
	"time"

	"github.com/lockctl/lockctl/store"
)

// HistoryQuery asks for the latest events, for `lockctl events`.
type HistoryQuery struct {
	Key   string        // "": every key
	Since time.Duration // 0: any age; else events at most this old (database clock)
	Limit int           // at most this many, the newest
}

// historySQL reads the newest $3 events (of key $1 unless it is NULL, no
// older than $2 microseconds unless it is NULL) and returns them oldest
// first. A key goes through the (lock_key, event_id) index; an age through
// the BRIN index on occurred_at.
var historySQL = `
SELECT * FROM (
    SELECT ` + eventColumns + ` FROM distributed_lock_event e
    WHERE ($1::text IS NULL OR e.lock_key = $1::text)
      AND ($2::bigint IS NULL OR e.occurred_at >= distributed_lock_now() - $2::bigint * interval '1 microsecond')
    ORDER BY e.event_id DESC LIMIT $3) newest
ORDER BY event_id`

// History returns the newest q.Limit events that match q, oldest first, as
// a log reads.
func History(ctx context.Context, db store.DBTX, q HistoryQuery) ([]Event, error) {
	var key, since any
	if q.Key != "" {
		key = q.Key
	}
	if q.Since > 0 {
		since = q.Since.Microseconds()
	}
	return collect[Event](db.Query(ctx, historySQL, key, since, q.Limit))
}
