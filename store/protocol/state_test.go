package protocol_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// The owners a case names: the caller, the holder it contends with, and the
// queued waiters.
const (
	me    = "me"
	other = "other"
	w1    = "w1"
	w2    = "w2"
	// anotherRole is a database role other than the caller's (session_user)
	// that took a lease or queued a record: another service.
	anotherRole = "another_service"
)

// lockRow is a key's distributed_lock row as a case prepares it. Durations
// are offsets from the database's clock when the row is written.
type lockRow struct {
	owner     string
	expiresIn time.Duration // expires_at − now; ≤ 0: the lease has run out
	ttl       time.Duration // the lease length; 0: a minute
	freedAgo  time.Duration // > 0: released that long ago
	renewals  int
	kind      string        // grant_kind; "": acquired
	handed    bool          // handed_to names a waiter whose record the hand-off consumed
	wakeFor   time.Duration // wake_until − now; 0: NULL (nobody ever waited)
	metadata  string        // JSON object; "": {}
	lockDelay time.Duration // the lease's lock-delay
	delayFor  time.Duration // delay_until − now (a force-release's delay); 0: NULL
	keptFor   time.Duration // kept_until − now (a hold's at-least point, 17_at_least.sql); 0: NULL
	// A shared or semaphore key's row (holder_state_test.go): lock_mode
	// ("": exclusive) and permits (0: NULL). An unreleased one is its
	// running group's, expiring at distributed_lock_group_end().
	mode    string
	permits int
	role    string // owner_role, the role that took the lease; "": the caller's (session_user)
}

// waiterRow is one distributed_lock_waiter row, queued in the order given.
type waiterRow struct {
	owner     string
	seenFor   time.Duration // seen_until − now; ≤ 0: the waiter lapsed
	ttl       time.Duration // the lease it asks for; 0: a minute
	claim     time.Duration // its claim window; 0: ten seconds
	waitedFor time.Duration // waiting_since = now − waitedFor
	logGrants bool
	actor     string // "": NULL
	metadata  string // "": {}
	lockDelay time.Duration
	// inSet: one record of owner's waiting key set; its records on the
	// set's keys share a group (sets_test.go).
	inSet   bool
	channel string // its wake channel (notify_test.go); "": NULL, the shared ones
	// mode is the lease it waits for: "shared" or "semaphore" (of permits)
	// for a holder's slot (12_shared_queue.sql); "": NULL, the key itself.
	mode    string
	permits int
	role    string // owner_role, the role that queued it; "": the caller's
	// upgradeFrom: an upgrade's record (17_convert.sql), giving up the
	// lease of the state's holder of that place (from 1); 0: none.
	upgradeFrom int
}

// state is what a key holds before the call, and for a key set's
// functions what the set's other keys hold (sets_test.go).
type state struct {
	row     *lockRow
	waiters []waiterRow
	// holders are the key's slots (holder_state_test.go), in slot order.
	holders []holderRow
	also    []also
	// sessions, the case's own first, with the grants bound to them
	// (session_state_test.go).
	sessions []sessionRow
	// revoke is an operator's revoke of the key's grant (revoke_state_test.go).
	revoke *revokeRow
}

// The states that matter, by name.
func noRow() state { return state{} }

func free() state {
	return state{row: &lockRow{owner: other, expiresIn: 30 * time.Second, freedAgo: time.Second}}
}

func heldBy(owner string) state {
	return state{row: &lockRow{owner: owner, expiresIn: 50 * time.Second}}
}

func lapsed(owner string) state {
	return state{row: &lockRow{owner: owner, expiresIn: -time.Second}}
}

// delayedAfterExpiry is a lease of owner's that ran out a second ago, with
// a lock-delay of a minute; delayedAfterRelease one force-released a second
// ago, whose delay (delay_until) runs for another 30 s; delayOver one whose
// lock-delay has run out.
func delayedAfterExpiry(owner string) state {
	return state{row: &lockRow{owner: owner, expiresIn: -time.Second, lockDelay: time.Minute}}
}

func delayedAfterRelease(owner string) state {
	return state{row: &lockRow{owner: owner, expiresIn: 30 * time.Second, freedAgo: time.Second,
		lockDelay: time.Minute, delayFor: 30 * time.Second}}
}

// releasedLate is a lease of owner's with a lock-delay of a minute that
// ran out two seconds ago and was released by its holder a second ago.
func releasedLate(owner string) state {
	return state{row: &lockRow{owner: owner, expiresIn: -2 * time.Second, freedAgo: time.Second, lockDelay: time.Minute}}
}

func delayOver(owner string) state {
	return state{row: &lockRow{owner: owner, expiresIn: -2 * time.Minute, lockDelay: time.Minute}}
}

// heldWithDelay is a running lease of owner's with a lock-delay of a minute.
// heldAtLeast is heldBy's lease marked to be kept until 4 minutes from
// now (17_at_least.sql); keptBy one released a second ago, before that
// point: the release keeps it until then.
func heldAtLeast(owner string) state {
	return state{row: &lockRow{owner: owner, expiresIn: 50 * time.Second, delayFor: 4 * time.Minute, keptFor: 4 * time.Minute}}
}

func keptBy(owner string) state {
	return state{row: &lockRow{owner: owner, expiresIn: 30 * time.Second, freedAgo: time.Second,
		delayFor: 4 * time.Minute, keptFor: 4 * time.Minute}}
}

func heldWithDelay(owner string) state {
	return state{row: &lockRow{owner: owner, expiresIn: 50 * time.Second, lockDelay: time.Minute}}
}

// promisedTo is a key a release handed to waiter owner, whose claim window
// (ten seconds) still runs; lapsedHandOffTo is one whose window ran out
// unclaimed.
func promisedTo(owner string) state {
	return state{row: &lockRow{owner: owner, expiresIn: 8 * time.Second, handed: true, wakeFor: time.Minute}}
}

func lapsedHandOffTo(owner string) state {
	return state{row: &lockRow{owner: owner, expiresIn: -time.Second, handed: true, wakeFor: time.Minute}}
}

// queued adds live waiters (owners, in queue order) and the row's
// wake_until that keeps releases handing off to them.
func (s state) queued(owners ...string) state {
	for _, o := range owners {
		s.waiters = append(s.waiters, waiterRow{owner: o, seenFor: 30 * time.Second, waitedFor: 2 * time.Second})
	}
	return s.waking()
}

// queuedOn adds live waiters as queued does, whose records name the wake
// channel their process LISTENs on.
func (s state) queuedOn(channel string, owners ...string) state {
	for _, o := range owners {
		s.waiters = append(s.waiters, waiterRow{owner: o, seenFor: 30 * time.Second, waitedFor: 2 * time.Second,
			channel: channel})
	}
	return s.waking()
}

// withWaiter adds one waiter as given (a lapsed one, one that logs grants).
func (s state) withWaiter(w waiterRow) state {
	s.waiters = append(s.waiters, w)
	return s.waking()
}

func (s state) waking() state {
	if s.row != nil && s.row.wakeFor == 0 {
		r := *s.row
		r.wakeFor = time.Minute
		s.row = &r
	}
	return s
}

// ofAnotherRole is s with its lease, its waiter records, its slots and its
// sessions taken by another database role (anotherRole), under the same
// owner names: another service that names the caller's owners.
func (s state) ofAnotherRole() state {
	if s.row != nil {
		s = s.with(func(r *lockRow) { r.role = anotherRole })
	}
	s.waiters = slices.Clone(s.waiters)
	for i := range s.waiters {
		s.waiters[i].role = anotherRole
	}
	s.holders = slices.Clone(s.holders)
	for i := range s.holders {
		s.holders[i].role = anotherRole
	}
	s.sessions = slices.Clone(s.sessions)
	for i := range s.sessions {
		s.sessions[i].role = anotherRole
	}
	return s
}

// with changes the prepared row.
func (s state) with(change func(*lockRow)) state {
	r := *s.row
	change(&r)
	s.row = &r
	return s
}

// prepared is what prepare wrote: the row's token and previous token (drawn
// from the token sequence, so later grants must draw larger ones) and the
// waiter ids.
type prepared struct {
	db                   *pgxpool.Pool // where it was written
	key                  string
	token, previousToken int64
	handedTo             int64 // the waiter id a promised row names
	waiterIDs            map[string]int64
	// set is the case's key set, with what was prepared for its other
	// keys (sets_test.go); nil for a one-key case.
	set    *keySet
	setIDs []setID // the records of waiting sets, grouped by prepareSet
	// sessions are the ids of the state's sessions, in its order.
	sessions []int64
	// slots are the tokens of the state's holders, in its order.
	slots []int64
}

// waiter is the id of the prepared waiter owner, or of the consumed waiter
// a promised row names.
func (p prepared) waiter(owner string) int64 {
	if id, ok := p.waiterIDs[owner]; ok {
		return id
	}
	return p.handedTo
}

// Every column of the tables a case prepares is named here, once.
const (
	insertLockSQL = `
WITH c AS (SELECT clock_timestamp() AS now, nextval('distributed_lock_fence_seq') AS prev),
     t AS (SELECT c.*, nextval('distributed_lock_fence_seq') AS token FROM c)
INSERT INTO distributed_lock (lock_key, owner_id, fence_token, expires_at, ttl, acquired_at,
    renewed_at, renew_count, released_at, grant_kind, previous_owner, previous_token,
    metadata, wake_until, handed_to, lock_delay, delay_until, lock_mode, permits, owner_role, kept_until)
SELECT $1, $2, t.token,
       CASE WHEN $13::text <> 'exclusive' AND $5::bigint = 0 THEN distributed_lock_group_end()
            ELSE t.now + $3 * interval '1 microsecond' END,
       $4 * interval '1 microsecond',
       t.now + ($3 - $4) * interval '1 microsecond',
       CASE WHEN $6::int > 0 THEN t.now - interval '1 second' END, $6::int,
       CASE WHEN $5::bigint > 0 THEN t.now - $5 * interval '1 microsecond' END,
       $7, 'earlier', t.prev, $8::jsonb,
       CASE WHEN $9::bigint <> 0 THEN t.now + $9 * interval '1 microsecond' END, $10,
       $11 * interval '1 microsecond',
       CASE WHEN $12::bigint <> 0 THEN t.now + $12 * interval '1 microsecond' END,
       $13, nullif($14::int, 0), coalesce(nullif($15, ''), session_user),
       CASE WHEN $16::bigint <> 0 THEN t.now + $16 * interval '1 microsecond' END
FROM t
RETURNING fence_token, previous_token`
	insertWaiterSQL = `
INSERT INTO distributed_lock_waiter (lock_key, owner_id, waiting_since, seen_until, ttl,
    claim_window, metadata, log_grants, actor, lock_delay, wake_channel, lock_mode, permits, owner_role, upgrade_from)
VALUES ($1, $2, clock_timestamp() - $3 * interval '1 microsecond',
        clock_timestamp() + $4 * interval '1 microsecond', $5 * interval '1 microsecond',
        $6 * interval '1 microsecond', $7::jsonb, $8, nullif($9, ''), $10 * interval '1 microsecond',
        nullif($11, ''), nullif($12, ''), nullif($13::int, 0), coalesce(nullif($14, ''), session_user), $15::bigint)
RETURNING waiter_id`
	// A waiter id as the queue would have drawn it, for a hand-off whose
	// waiter record is consumed.
	drawWaiterIDSQL = `SELECT nextval(pg_get_serial_sequence('distributed_lock_waiter', 'waiter_id'))`
)

// prepare writes s for key.
func prepare(t *testing.T, db *pgxpool.Pool, key string, s state) prepared {
	t.Helper()
	ctx := context.Background()
	p := prepared{db: db, key: key, waiterIDs: map[string]int64{}}
	if r := s.row; r != nil {
		if r.handed {
			if err := db.QueryRow(ctx, drawWaiterIDSQL).Scan(&p.handedTo); err != nil {
				t.Fatalf("draw a waiter id: %v", err)
			}
		}
		var handed *int64
		if r.handed {
			handed = &p.handedTo
		}
		err := db.QueryRow(ctx, insertLockSQL, key, r.owner, r.expiresIn.Microseconds(),
			or(r.ttl, time.Minute).Microseconds(), r.freedAgo.Microseconds(), r.renewals,
			orString(r.kind, "acquired"), orString(r.metadata, "{}"), r.wakeFor.Microseconds(), handed,
			r.lockDelay.Microseconds(), r.delayFor.Microseconds(), orString(r.mode, "exclusive"), r.permits, r.role,
			r.keptFor.Microseconds(),
		).Scan(&p.token, &p.previousToken)
		if err != nil {
			t.Fatalf("prepare the row of %q: %v", key, err)
		}
	}
	p.slots = prepareHolders(t, db, key, s.holders)
	for _, w := range s.waiters {
		var id int64
		var from *int64
		if w.upgradeFrom > 0 {
			from = &p.slots[w.upgradeFrom-1]
		}
		err := db.QueryRow(ctx, insertWaiterSQL, key, w.owner, w.waitedFor.Microseconds(),
			w.seenFor.Microseconds(), or(w.ttl, time.Minute).Microseconds(),
			or(w.claim, 10*time.Second).Microseconds(), orString(w.metadata, "{}"), w.logGrants, w.actor,
			w.lockDelay.Microseconds(), w.channel, w.mode, w.permits, w.role, from,
		).Scan(&id)
		if err != nil {
			t.Fatalf("prepare waiter %s of %q: %v", w.owner, key, err)
		}
		p.waiterIDs[w.owner] = id
		if w.inSet {
			p.setIDs = append(p.setIDs, setID{owner: w.owner, id: id})
		}
	}
	return p
}

func or(d, fallback time.Duration) time.Duration {
	if d == 0 {
		return fallback
	}
	return d
}

func orString(s, fallback string) string {
	if s == "" {
		return fallback
	}
	return s
}
