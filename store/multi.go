package store

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/lockctl/lockctl/internal/lockdb"
)

// The key-set functions of schema.sql (08_multi.sql): every one takes the
// keys as an array, locks their rows in key order and answers one row per
// key in key order (a refused try: the key that refused).
const (
	acquireAllSQL = `
SELECT a.lock_key, a.owner_id, a.fence_token, a.expires_at, a.ttl, a.outcome, a.remaining, a.queue_length, a.delay_until
FROM distributed_lock_acquire_all($1::text[], $2, $3::bigint, $4::jsonb, $5, $6::jsonb, $7::boolean, $8::bigint,
                                  $9::text[], $10::integer[]) a`
	enqueueAllSQL = `
SELECT e.lock_key, e.owner_id, e.fence_token, e.expires_at, e.ttl, e.outcome, e.remaining, e.waiter_id, e.db_now,
       e.queue_position, e.queue_length, e.delay_until, e.cycle
FROM distributed_lock_enqueue_all($1::text[], $2, $3::bigint, $4::bigint, $5::bigint, $6::jsonb, $7, $8::jsonb, $9::boolean,
                                  $10::bigint, $11, $12::text[], $13::integer[]) e`
	pollAllSQL = `
SELECT p.lock_key, p.owner_id, p.fence_token, p.expires_at, p.ttl, p.outcome, p.remaining, p.waiter_id, p.db_now,
       p.queue_position, p.queue_length, p.delay_until, p.cycle
FROM distributed_lock_waiter_poll_all($1::text[], $2::bigint[], $3::bigint) p`
	leaveAllSQL   = `SELECT distributed_lock_waiter_leave_all($1::text[], $2::bigint[], $3::boolean, $4)`
	renewAllSQL   = `SELECT r.lock_key, r.owner_id, r.fence_token, r.expires_at, r.ttl, r.outcome FROM distributed_lock_renew_all($1::text[], $2, $3::bigint[], $4::bigint) r`
	releaseAllSQL = `SELECT r.lock_key, r.owner_id, r.fence_token, r.expires_at, r.ttl, r.outcome FROM distributed_lock_release_all($1::text[], $2, $3::bigint[], $4::boolean, $5::boolean, $6) r`
)

// TryGrantAll makes one all-or-nothing attempt at keys for p's owner (p.Key
// is not used), each in its mode (p.Modes): every key granted, one Grant
// per key in key order (a shared or semaphore key's: the holder's lease),
// or one Grant, the refusal of the first key that could not be, and
// nothing taken.
func TryGrantAll(ctx context.Context, db DBTX, keys []string, p GrantParams) ([]Grant, error) {
	modes, permits := modeArgs(p.Modes)
	rows, err := db.Query(ctx, acquireAllSQL, keys, p.Owner, p.TTL.Microseconds(),
		jsonArg(p.Metadata), p.Actor, jsonArg(p.Detail), p.LogGrants, p.LockDelay.Microseconds(), modes, permits)
	if err != nil {
		return nil, Interpret(err)
	}
	grants, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (Grant, error) {
		var g Grant
		var owner *string
		var token *int64
		var expires *time.Time
		var ttl, remaining *time.Duration
		var length *int32
		err := row.Scan(&g.Key, &owner, &token, &expires, &ttl, &g.Outcome, &remaining, &length, &g.DelayUntil)
		g.Owner, g.Token, g.ExpiresAt, g.TTL, g.Remaining = deref(owner), deref(token), deref(expires), deref(ttl), deref(remaining)
		g.QueueLength = int(deref(length))
		return g, err
	})
	return grants, Interpret(err)
}

// EnqueueAll grants p's owner every key of keys (each in its mode,
// p.Modes), or queues it on all of them as one waiter (see distributed_lock_enqueue_all): one Queued per key
// in key order, each with its waiter record's id when queued. A single
// lockdb.OutcomeBusy row: try again.
func EnqueueAll(ctx context.Context, db DBTX, keys []string, p QueueParams) ([]Queued, error) {
	modes, permits := modeArgs(p.Modes)
	return collectQueued(db.Query(ctx, enqueueAllSQL, keys, p.Owner, p.TTL.Microseconds(),
		p.ClaimWindow.Microseconds(), p.SeenFor.Microseconds(), jsonArg(p.Metadata), p.Actor, jsonArg(p.Detail), p.LogGrants,
		p.LockDelay.Microseconds(), channelArg(p.WakeChannel), modes, permits))
}

// PollAll checks a waiting set, whose records ids are one per key of keys
// (the same order): handed every key, still queued (its records refreshed
// for seenFor), gone, or refused as a deadlock. One Queued per key, in key
// order.
func PollAll(ctx context.Context, db DBTX, keys []string, ids []int64, seenFor time.Duration) ([]Queued, error) {
	return collectQueued(db.Query(ctx, pollAllSQL, keys, ids, seenFor.Microseconds()))
}

func collectQueued(rows pgx.Rows, err error) ([]Queued, error) {
	if err != nil {
		return nil, Interpret(err)
	}
	qs, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (Queued, error) {
		return scanQueuedRow(row)
	})
	return qs, Interpret(err)
}

// LeaveAll takes a waiting set out of its queues; keys handed to it and not
// yet claimed are released (logged with log, by actor) and passed on. It
// returns what it did: lockdb.LeftQueue, lockdb.PassedOn or lockdb.LeftNone.
func LeaveAll(ctx context.Context, db DBTX, keys []string, ids []int64, log bool, actor string) (string, error) {
	var did string
	if err := db.QueryRow(ctx, leaveAllSQL, keys, ids, log, actor).Scan(&did); err != nil {
		return "", Interpret(err)
	}
	return did, nil
}

// RenewAll renews owner's leases refs (one owner) by ttl, in one statement:
// the leases renewed, in key order, and the keys whose lease was no longer
// current (the others are renewed all the same).
func RenewAll(ctx context.Context, db DBTX, refs []LeaseRef, ttl time.Duration) (renewed []LeaseRow, notHeld []string, err error) {
	keys, owner, tokens := splitRefs(refs)
	rows, err := db.Query(ctx, renewAllSQL, keys, owner, tokens, ttl.Microseconds())
	if err != nil {
		return nil, nil, Interpret(err)
	}
	return collectDone(rows, lockdb.OutcomeRenewed)
}

// collectDone collects the (LeaseRow's columns, outcome) rows of a set's
// renewal or release: the rows whose outcome is done, in key order, and
// the keys of the others.
func collectDone(rows pgx.Rows, done string) (doneRows []LeaseRow, notHeld []string, err error) {
	var r LeaseRow
	var ownerID *string
	var token *int64
	var expires *time.Time
	var length *time.Duration
	var outcome string
	_, err = pgx.ForEachRow(rows, []any{&r.Key, &ownerID, &token, &expires, &length, &outcome}, func() error {
		if outcome != done {
			notHeld = append(notHeld, r.Key)
			return nil
		}
		r.Owner, r.Token, r.ExpiresAt, r.TTL = deref(ownerID), deref(token), deref(expires), deref(length)
		doneRows = append(doneRows, r)
		return nil
	})
	return doneRows, notHeld, Interpret(err)
}

// ReleaseAll frees the leases refs (one owner), in one statement,
// handing each key to its waiters: the leases released, in key order, and
// the keys whose lease was not current (the others are released all the
// same).
func ReleaseAll(ctx context.Context, db DBTX, refs []LeaseRef, log bool, actor string, lazy bool) (released []LeaseRow, notHeld []string, err error) {
	keys, owner, tokens := splitRefs(refs)
	lazy = lazy && standalone(db)
	rows, err := db.Query(ctx, releaseAllSQL, keys, owner, tokens, lazy, log, actor)
	if err != nil {
		return nil, nil, Interpret(err)
	}
	return collectDone(rows, lockdb.OutcomeReleased)
}

func splitRefs(refs []LeaseRef) (keys []string, owner string, tokens []int64) {
	for _, r := range refs {
		keys, owner, tokens = append(keys, r.Key), r.Owner, append(tokens, r.Token)
	}
	return keys, owner, tokens
}
