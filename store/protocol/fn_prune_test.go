package protocol_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
)

// pruneKeys is the state every prune case starts from, one key each: rows
// free or lapsed for two hours or for a minute, a held lease, and its
// waiters, live, lapsed for 30 s and dead for two minutes, and a lease
// that ran out a second ago into a lock-delay of a minute, which stays
// until its delay is over whatever free_for_us says, and a row free for two
// hours that is promised to a live waiter (a waiting set keeps a key it
// heads free until it can have its other keys), which stays while it is;
// and a shared key's group that ended two hours ago, whose slots go with
// its row, and one that runs.
var pruneKeys = map[string]state{
	"free for 2h":       {row: &lockRow{owner: other, expiresIn: -2*time.Hour + time.Second, freedAgo: 2 * time.Hour}},
	"free for 1m":       {row: &lockRow{owner: other, expiresIn: -time.Minute + time.Second, freedAgo: time.Minute}},
	"lapsed for 2h":     lapsed(other).with(func(r *lockRow) { r.expiresIn = -2 * time.Hour }),
	"lapsed for 1m":     lapsed(other).with(func(r *lockRow) { r.expiresIn = -time.Minute }),
	"in its lock-delay": delayedAfterExpiry(other),
	"promised for 2h": state{row: &lockRow{owner: other, expiresIn: -2*time.Hour + time.Second, freedAgo: 2 * time.Hour}}.
		queued("waiting"),
	"held": heldBy(other).
		withWaiter(waiterRow{owner: "live", seenFor: 30 * time.Second}).
		withWaiter(waiterRow{owner: "lapsed for 30s", seenFor: -30 * time.Second}).
		withWaiter(waiterRow{owner: "dead for 2m", seenFor: -2 * time.Minute}),
	"group ended 2h": state{row: &lockRow{owner: groupOwner, mode: "shared", expiresIn: -2 * time.Hour, freedAgo: 2 * time.Hour}}.
		holding(holderRow{owner: other, expiresIn: -2 * time.Hour, freedAgo: 2 * time.Hour}),
	"shared, running": sharedBy(other),
}

// pruneEvents are events of the held key, this long ago.
var pruneEvents = []time.Duration{2 * time.Hour, time.Minute}

const (
	insertEventSQL = `
INSERT INTO distributed_lock_event (occurred_at, lock_key, kind, owner_id, fence_token, actor)
VALUES (clock_timestamp() - $2 * interval '1 microsecond', $1, 'acquired', 'other', 1, 'other')`
	emptySQL = `TRUNCATE distributed_lock, distributed_lock_waiter, distributed_lock_event,
		distributed_lock_session CASCADE`
	// Sessions that lapsed 2 minutes and 30 seconds ago, and one that runs.
	insertSessionsSQL = `INSERT INTO distributed_lock_session (owner_id, ttl, opened_at, expires_at)
SELECT o, interval '10 seconds', clock_timestamp() - interval '1 hour', clock_timestamp() + a
FROM (VALUES ('lapsed for 2m', interval '-2 minutes'), ('lapsed for 30s', interval '-30 seconds'), ('live', interval '10 seconds')) v(o, a)`
	pruneSQL = `SELECT * FROM distributed_lock_prune(free_for_us => $1, events_older_us => $2, gate_wait_ms => $3)`
	// What a grant in flight holds, between drawing a token and writing it.
	grantGateSQL = `LOCK TABLE distributed_lock_prune_gate IN ROW EXCLUSIVE MODE`
	leftSQL      = `SELECT (SELECT coalesce(array_agg(lock_key ORDER BY lock_key), '{}') FROM distributed_lock WHERE slot = 0),
		(SELECT coalesce(array_agg(owner_id::text ORDER BY owner_id), '{}') FROM distributed_lock_waiter),
		(SELECT count(*) FROM distributed_lock_event),
		(SELECT coalesce(array_agg(owner_id::text ORDER BY owner_id), '{}') FROM distributed_lock_session),
		(SELECT coalesce(array_agg(DISTINCT lock_key::text ORDER BY lock_key::text), '{}') FROM distributed_lock WHERE slot > 0)`
)

// Prune deletes across keys, so the cases take turns on a schema of their
// own, each starting from pruneKeys afresh.
func TestPrune(t *testing.T) {
	t.Parallel()
	f := newIsolatedFixture(t, "distributed_lock_prune")
	type counts struct{ locks, waiters, events, sessions int64 }
	all := []string{"free for 1m", "free for 2h", "group ended 2h", "held", "in its lock-delay", "lapsed for 1m", "lapsed for 2h",
		"promised for 2h", "shared, running"}
	allSlots := []string{"group ended 2h", "shared, running"}
	leftSlots := []string{"shared, running"}
	allWaiters := []string{"dead for 2m", "lapsed for 30s", "live", "waiting"}
	allSessions := []string{"lapsed for 2m", "lapsed for 30s", "live"}
	leftSessions := []string{"lapsed for 30s", "live"}
	for _, c := range []struct {
		name          string
		freeFor       time.Duration
		eventsOlder   *time.Duration
		grantInFlight bool

		err         string
		deleted     counts
		keys, queue []string // what is left
		events      int64
		sessions    []string
		slots       []string // the keys with holder slots left
	}{
		{name: "free for longer than an hour", freeFor: time.Hour,
			deleted: counts{3, 1, 0, 1}, keys: []string{"free for 1m", "held", "in its lock-delay", "lapsed for 1m", "promised for 2h", "shared, running"}, queue: []string{"lapsed for 30s", "live", "waiting"}, events: 2, sessions: leftSessions, slots: leftSlots},
		{name: "free at all, but not in its lock-delay", freeFor: 0,
			deleted: counts{5, 1, 0, 1}, keys: []string{"held", "in its lock-delay", "promised for 2h", "shared, running"}, queue: []string{"lapsed for 30s", "live", "waiting"}, events: 2, sessions: leftSessions, slots: leftSlots},
		{name: "and events older than an hour", freeFor: time.Hour, eventsOlder: ptr(time.Hour),
			deleted: counts{3, 1, 1, 1}, keys: []string{"free for 1m", "held", "in its lock-delay", "lapsed for 1m", "promised for 2h", "shared, running"}, queue: []string{"lapsed for 30s", "live", "waiting"}, events: 1, sessions: leftSessions, slots: leftSlots},
		{name: "a grant in flight past gate_wait_ms: nothing", freeFor: 0, eventsOlder: ptr(time.Duration(0)), grantInFlight: true,
			err: "55P03", keys: all, queue: allWaiters, events: 2, sessions: allSessions, slots: allSlots},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx := context.Background()
			if _, err := f.db.Exec(ctx, emptySQL); err != nil {
				t.Fatal(err)
			}
			for key, s := range pruneKeys {
				prepare(t, f.db, key, s)
			}
			if _, err := f.db.Exec(ctx, insertSessionsSQL); err != nil {
				t.Fatal(err)
			}
			for _, ago := range pruneEvents {
				if _, err := f.db.Exec(ctx, insertEventSQL, "held", ago.Microseconds()); err != nil {
					t.Fatal(err)
				}
			}
			if c.grantInFlight {
				tx, err := f.db.Begin(ctx)
				if err != nil {
					t.Fatal(err)
				}
				defer func() { _ = tx.Rollback(ctx) }()
				if _, err := tx.Exec(ctx, grantGateSQL); err != nil {
					t.Fatal(err)
				}
			}
			var older any
			if c.eventsOlder != nil {
				older = c.eventsOlder.Microseconds()
			}
			var got counts
			err := f.db.QueryRow(ctx, pruneSQL, c.freeFor.Microseconds(), older, 1).Scan(&got.locks, &got.waiters, &got.events, &got.sessions)
			var pgErr *pgconn.PgError
			switch {
			case c.err != "":
				if !errors.As(err, &pgErr) || pgErr.Code != c.err {
					t.Fatalf("prune: %v; want SQLSTATE %s", err, c.err)
				}
				if !slices.Contains(documentedErrors(t), c.err) {
					t.Errorf("SQLSTATE %s is not in docs/protocol.md's Errors table", c.err)
				}
			case err != nil:
				t.Fatal(err)
			case got != c.deleted:
				t.Errorf("deleted %+v; want %+v", got, c.deleted)
			}
			var keys, queue, sessions, slots []string
			var events int64
			if err := f.db.QueryRow(ctx, leftSQL).Scan(&keys, &queue, &events, &sessions, &slots); err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(slots, c.slots) {
				t.Errorf("left the slots of %v; want those of %v", slots, c.slots)
			}
			if !slices.Equal(keys, c.keys) || !slices.Equal(queue, c.queue) || events != c.events {
				t.Errorf("left keys %v, waiters %v, %d events; want %v, %v, %d", keys, queue, events, c.keys, c.queue, c.events)
			}
			if !slices.Equal(sessions, c.sessions) {
				t.Errorf("left sessions %v; want %v", sessions, c.sessions)
			}
		})
	}
}

func ptr[T any](v T) *T { return &v }
