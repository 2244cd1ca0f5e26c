package lockview

import (
	"context"
	"math"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/lockctl/lockctl/internal/lockdb"
	"github.com/lockctl/lockctl/locker"
	"github.com/lockctl/lockctl/store"
)

// Event is one row of distributed_lock_event.
type Event struct {
	ID         int64     `db:"event_id"`
	OccurredAt time.Time `db:"occurred_at"`
	Key        string    `db:"lock_key"`
	Kind       string    `db:"kind"` // lockdb.EventAcquired, …
	Owner      *string   `db:"owner_id"`
	Token      *int64    `db:"fence_token"`
	// Actor is who the caller said it was: a claim, which any caller may
	// make. Role is the database role whose call wrote the event, set by
	// the protocol function (session_user), which no caller can choose.
	Actor         string         `db:"actor"`
	Role          string         `db:"caller_role"`
	PreviousOwner *string        `db:"previous_owner"`
	PreviousToken *int64         `db:"previous_token"`
	Detail        map[string]any `db:"detail"`
}

// By says who caused e, as every reader shows it: the actor the caller
// claimed, marked as a claim, and the database role that made the call,
// "alice@ops (claimed) as role svc_billing" (without a role, as an event
// made up by a test: the claim alone). escape makes each name safe to
// print.
func (e Event) By(escape func(string) string) string {
	by := escape(e.Actor) + " (claimed)"
	if e.Role != "" {
		by += " as role " + escape(e.Role)
	}
	return by
}

// DeadlockCycle is the cycle a deadlock_refused event records, the refused
// owner's wait first (each step's owner waits for its key, which the next
// step's owner holds or is queued ahead for; the last waits for the
// first's); false for another kind of event, or a detail without a cycle
// of that shape.
func (e Event) DeadlockCycle() ([]locker.DeadlockStep, bool) {
	steps, ok := e.Detail["cycle"].([]any)
	if e.Kind != lockdb.EventDeadlockRefused || !ok || len(steps) == 0 {
		return nil, false
	}
	cycle := make([]locker.DeadlockStep, 0, len(steps))
	for _, s := range steps {
		m, _ := s.(map[string]any)
		owner, isOwner := m["owner"].(string)
		key, isKey := m["key"].(string)
		if !isOwner || !isKey {
			return nil, false
		}
		cycle = append(cycle, locker.DeadlockStep{Owner: owner, Key: key})
	}
	return cycle, true
}

// SessionID is the session a session_ended event ended: such an event
// has no key (it is of no one key), and this is what names it; false for
// another kind of event.
func (e Event) SessionID() (int64, bool) {
	if e.Kind != lockdb.EventSessionEnded {
		return 0, false
	}
	// JSON numbers decode as float64; a session id is well below 2^53.
	id, ok := e.Detail["session_id"].(float64)
	if !ok || id <= 0 || id != math.Trunc(id) {
		return 0, false
	}
	return int64(id), true
}

// eventColumns read an event. Its detail is at most lockdb.MaxJSONBytes as
// stored (the schema's bound); one stored before that bound, larger, is
// read as its size alone ({"omitted_bytes": n}), which pg_column_size
// reads without fetching the value: a reader of the history fetches and
// decodes a bounded amount, whatever was written.
var eventColumns = `e.event_id, e.occurred_at, e.lock_key, e.kind, e.owner_id, e.fence_token,
	e.actor, e.caller_role, e.previous_owner, e.previous_token,
	CASE WHEN pg_column_size(e.detail) <= ` + strconv.Itoa(lockdb.MaxJSONBytes) + ` THEN e.detail::jsonb
	     ELSE jsonb_build_object('omitted_bytes', pg_column_size(e.detail)) END AS detail`

var keyEventsSQL = `
SELECT ` + eventColumns + ` FROM distributed_lock_event e
WHERE e.lock_key = $1 ORDER BY e.event_id DESC LIMIT $2`

// KeyEvents returns key's latest events, newest first.
func KeyEvents(ctx context.Context, db store.DBTX, key string, limit int) ([]Event, error) {
	return collect[Event](db.Query(ctx, keyEventsSQL, key, limit))
}

var recentEventsSQL = `
SELECT ` + eventColumns + ` FROM distributed_lock_event e
WHERE e.event_id > $1 ORDER BY e.event_id DESC LIMIT $2`

// RecentEvents returns the latest events with an id above afterID, newest
// first (afterID 0: the latest of all).
func RecentEvents(ctx context.Context, db store.DBTX, afterID int64, limit int) ([]Event, error) {
	return collect[Event](db.Query(ctx, recentEventsSQL, afterID, limit))
}

func collect[T any](rows pgx.Rows, err error) ([]T, error) {
	if err != nil {
		return nil, store.Interpret(err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowToStructByName[T])
	if err != nil {
		return nil, store.Interpret(err)
	}
	return out, nil
}
