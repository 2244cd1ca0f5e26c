package lockview

import (
	"context"
	"fmt"
	"time"

	"github.com/lockctl/lockctl/store"
)

// Rates counts grants over a recent span of time, in equal buckets, from
// distributed_lock_event. Index 0 of each slice is the oldest bucket.
type Rates struct {
	Span   time.Duration
	Bucket time.Duration
	// Grants counts every grant (kinds acquired and stolen).
	Grants []int64
	// Steals counts grants that took another owner's expired lease.
	Steals []int64
	// Handoffs counts grants to a caller that had been waiting (the event
	// detail has "waited_ms"): how often the lock passed down a queue.
	Handoffs []int64
}

// Sum adds up a bucket slice.
func Sum(buckets []int64) int64 {
	var n int64
	for _, b := range buckets {
		n += b
	}
	return n
}

// ratesSQL buckets the grant events of the last $1 microseconds into
// buckets of $2 microseconds, counting back from the database's now: bucket
// 0 is the newest. It reads the span through the occurred_at index.
const ratesSQL = `
WITH c AS (SELECT distributed_lock_now() AS ts)
SELECT floor(extract(epoch FROM c.ts - e.occurred_at) * 1000000 / $2::bigint)::int AS bucket,
       count(*) AS grants,
       count(*) FILTER (WHERE e.kind = 'stolen') AS steals,
       count(*) FILTER (WHERE e.detail ? 'waited_ms') AS handoffs
FROM distributed_lock_event e CROSS JOIN c
WHERE e.occurred_at > c.ts - $1::bigint * interval '1 microsecond'
  AND e.kind IN ('acquired', 'stolen')
GROUP BY 1`

type rateRow struct {
	Bucket   int32 `db:"bucket"`
	Grants   int64 `db:"grants"`
	Steals   int64 `db:"steals"`
	Handoffs int64 `db:"handoffs"`
}

// GrantRates counts grants, steals and hand-offs to waiters over the last
// span, in buckets of bucket (span must be a positive multiple of it).
func GrantRates(ctx context.Context, db store.DBTX, span, bucket time.Duration) (Rates, error) {
	if bucket <= 0 || span < bucket || span%bucket != 0 {
		return Rates{}, fmt.Errorf("lockview: rates: span %s must be a positive multiple of bucket %s", span, bucket)
	}
	rows, err := collect[rateRow](db.Query(ctx, ratesSQL, span.Microseconds(), bucket.Microseconds()))
	if err != nil {
		return Rates{}, err
	}
	n := int(span / bucket)
	r := Rates{Span: span, Bucket: bucket,
		Grants: make([]int64, n), Steals: make([]int64, n), Handoffs: make([]int64, n)}
	for _, row := range rows {
		b := int(row.Bucket)
		if b < 0 || b >= n {
			continue // an event stamped in the future by another session's clock reading
		}
		i := n - 1 - b
		r.Grants[i] += row.Grants
		r.Steals[i] += row.Steals
		r.Handoffs[i] += row.Handoffs
	}
	return r, nil
}
