package lockview

import (
	"context"
	"strconv"
	"time"

	"github.com/lockctl/lockctl/internal/lockdb"
	"github.com/lockctl/lockctl/store"
)

// Measure is what one event of the log says about how long a key was
// waited for and held: the waits and holds `lockctl metrics` and the
// console's hot keys are computed from, with nothing written for them
// beyond the events the protocol logs anyway.
type Measure struct {
	ID   int64     // event_id
	At   time.Time // occurred_at (database clock)
	Key  string
	Kind string // lockdb.EventAcquired, EventStolen, EventGaveUp, EventReleased, EventForceExpired or EventForceReleased
	// Wait is how long the acquire waited, for a grant (acquired, stolen)
	// or a wait given up (gave_up): the event's waited_ms, or none for a
	// grant without one (granted at its first try). Valid only when
	// Waited.
	Wait   time.Duration
	Waited bool
	// Handoff: a grant to a caller that had waited (it has waited_ms), as
	// the console's rates count hand-offs.
	Handoff bool
	// Hold is how long the lease an ending event ends (released,
	// force_expired, force_released) was held: from its grant's event to
	// this one. Valid only when Held: a lease whose grant was not logged
	// (a locker without LogGrants, or pruned) has no measured hold.
	Hold time.Duration
	Held bool
}

// Steal is a grant that took another owner's expired lease.
func (m Measure) Steal() bool { return m.Kind == lockdb.EventStolen }

// Force is an operator's force-expire or force-release.
func (m Measure) Force() bool {
	return m.Kind == lockdb.EventForceExpired || m.Kind == lockdb.EventForceReleased
}

// GaveUp is a wait that ended without a grant.
func (m Measure) GaveUp() bool { return m.Kind == lockdb.EventGaveUp }

// MeasuredKinds are the events a Measure is read from.
var MeasuredKinds = []string{lockdb.EventAcquired, lockdb.EventStolen, lockdb.EventGaveUp,
	lockdb.EventReleased, lockdb.EventForceExpired, lockdb.EventForceReleased}

// grantLookback bounds how far back in a key's history an ending event
// looks for its lease's grant: the events logged on the key while the
// lease ran (other holders' slots, waits given up, refused writes). A
// lease with more than that between its grant and its end has no measured
// hold, and an ending event costs at most that many index entries.
const grantLookback = 1000

// maxWaitMs bounds a waited_ms a caller's event detail may carry (a grant's
// detail is partly the caller's): a year, so no value overflows.
const maxWaitMs = 365 * 24 * 3600 * 1000

// measuresSQL reads the measured events after event $1, in event_id order
// (the primary key), at most $3 of them (b), and says of each whether it
// occurred more than $2 microseconds ago (settled). A grant's or a
// give-up's wait is its waited_ms when that is a number (a grant's detail
// is partly the caller's: anything else counts as none, and it is
// bounded). An ending event's hold runs from its lease's grant: the grant
// of its key and token among the events read with it (g), which is where
// a short lease's is; else the newest grant on the key before it with a
// token no larger than its own (tokens of a key grow with its grants),
// read backwards through the key's index (o), which must have its token,
// or the lease's grant was not logged.
var measuresSQL = `
WITH c AS (SELECT distributed_lock_now() - $2::bigint * interval '1 microsecond' AS settled),
b AS MATERIALIZED (
    SELECT e.event_id, e.occurred_at, e.lock_key, e.kind, e.fence_token, e.detail
    FROM distributed_lock_event e
    WHERE e.event_id > $1 AND e.kind = ANY ($4::text[])
    ORDER BY e.event_id LIMIT $3)
SELECT e.event_id, e.occurred_at, e.lock_key, e.kind, e.occurred_at <= c.settled AS settled,
       CASE WHEN e.kind IN ('acquired', 'stolen', 'gave_up') THEN
           CASE WHEN jsonb_typeof(e.detail -> 'waited_ms') = 'number'
                THEN least(greatest((e.detail ->> 'waited_ms')::numeric, 0), ` + strconv.Itoa(maxWaitMs) + `)::bigint
                ELSE 0 END END AS wait_ms,
       e.kind IN ('acquired', 'stolen') AND coalesce(jsonb_typeof(e.detail -> 'waited_ms') = 'number', false) AS handoff,
       CASE WHEN coalesce(g.occurred_at, o.occurred_at) IS NOT NULL
            THEN greatest(e.occurred_at - coalesce(g.occurred_at, o.occurred_at), interval '0') END AS hold
FROM c CROSS JOIN b e
LEFT JOIN b g ON e.kind IN ('released', 'force_expired', 'force_released') AND g.kind IN ('acquired', 'stolen')
    AND g.lock_key = e.lock_key AND g.fence_token = e.fence_token AND g.event_id < e.event_id
LEFT JOIN LATERAL (
    SELECT p.occurred_at FROM (
        SELECT p.occurred_at, p.fence_token FROM (
            SELECT p.occurred_at, p.fence_token, p.kind, p.event_id FROM distributed_lock_event p
            WHERE g.event_id IS NULL AND e.kind IN ('released', 'force_expired', 'force_released')
              AND p.lock_key = e.lock_key AND p.event_id < e.event_id
            ORDER BY p.event_id DESC LIMIT ` + strconv.Itoa(grantLookback) + `) p
        WHERE p.kind IN ('acquired', 'stolen') AND p.fence_token <= e.fence_token
        ORDER BY p.event_id DESC LIMIT 1) p
    WHERE p.fence_token = e.fence_token) o ON true
ORDER BY e.event_id`

type measureRow struct {
	ID      int64          `db:"event_id"`
	At      time.Time      `db:"occurred_at"`
	Key     string         `db:"lock_key"`
	Kind    string         `db:"kind"`
	Settled bool           `db:"settled"`
	WaitMs  *int64         `db:"wait_ms"`
	Handoff bool           `db:"handoff"`
	Hold    *time.Duration `db:"hold"`
}

// ReadMeasures returns the measured events after event afterID, oldest
// first, at most limit, stopping before the first that occurred less than
// settle ago (its transaction may not have committed, and one with a
// smaller id may yet commit). through is the id to read after next time:
// the last event returned, or afterID; more says limit was reached, so
// there may be more to read now.
func ReadMeasures(ctx context.Context, db store.DBTX, afterID int64, settle time.Duration, limit int) (
	ms []Measure, through int64, more bool, err error) {
	rows, err := collect[measureRow](db.Query(ctx, measuresSQL, afterID, settle.Microseconds(), limit, MeasuredKinds))
	if err != nil {
		return nil, afterID, false, err
	}
	through = afterID
	for _, r := range rows {
		if !r.Settled {
			return ms, through, false, nil
		}
		m := Measure{ID: r.ID, At: r.At, Key: r.Key, Kind: r.Kind, Handoff: r.Handoff}
		if r.WaitMs != nil {
			m.Wait, m.Waited = time.Duration(*r.WaitMs)*time.Millisecond, true
		}
		if r.Hold != nil {
			m.Hold, m.Held = *r.Hold, true
		}
		ms = append(ms, m)
		through = r.ID
	}
	return ms, through, len(rows) == limit, nil
}

// LastEventID is the newest event's id (0 for an empty log): where a
// reader that measures from now on starts.
func LastEventID(ctx context.Context, db store.DBTX) (int64, error) {
	var id int64
	err := db.QueryRow(ctx, `SELECT coalesce(max(e.event_id), 0) FROM distributed_lock_event e`).Scan(&id)
	return id, store.Interpret(err)
}

// FirstEventSince is the id before the first event that occurred within
// span of the database's now (the newest event's id when none did): where
// a reader of that span starts. It reads the span through the BRIN index
// on occurred_at, so it costs about a pass over the span's events.
func FirstEventSince(ctx context.Context, db store.DBTX, span time.Duration) (int64, error) {
	var id int64
	err := db.QueryRow(ctx, `
SELECT coalesce((SELECT min(e.event_id) - 1 FROM distributed_lock_event e
                 WHERE e.occurred_at > distributed_lock_now() - $1::bigint * interval '1 microsecond'),
                (SELECT max(e.event_id) FROM distributed_lock_event e), 0)`, span.Microseconds()).Scan(&id)
	return id, store.Interpret(err)
}
