package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/lockctl/lockctl/internal/lockdb"
)

// GrantParams is one acquisition attempt.
type GrantParams struct {
	Key      string
	Owner    string
	TTL      time.Duration
	Metadata []byte // JSON object stored on the row; nil means {}
	Actor    string // recorded on the event
	Detail   []byte // JSON object of extra event detail (e.g. how long the caller waited); nil means {}
	// LogGrants also logs grants of free or new rows as "acquired" events.
	// Steals are always logged.
	LogGrants bool
	// LockDelay is the grant's lock-delay: when its lease ends without its
	// holder's release, nobody is granted the key for that long (0 to 60s).
	LockDelay time.Duration
	// Modes are a key set's leases (TryGrantAll, EnqueueAll), one per key
	// in the keys' order; nil: every key exclusive.
	Modes []KeyMode
}

// KeyMode is the lease a key set asks for on one of its keys: Mode
// lockdb.ModeExclusive (or ""), lockdb.ModeShared, or lockdb.ModeSemaphore
// with its Permits.
type KeyMode struct {
	Mode    string
	Permits int
}

// modeArgs are modes as the key-set functions take them: a modes and a
// permits array, NULL for nil and for a key's absent mode or permits.
func modeArgs(modes []KeyMode) (names []*string, permits []*int32) {
	if modes == nil {
		return nil, nil
	}
	for _, m := range modes {
		var name *string
		var n *int32
		if m.Mode != "" {
			name = &m.Mode
		}
		if m.Permits != 0 {
			p := int32(m.Permits)
			n = &p
		}
		names, permits = append(names, name), append(permits, n)
	}
	return names, permits
}

// Grant is the result of an attempt: what it granted, or, when refused,
// the key's row as the attempt found it.
type Grant struct {
	LeaseRow
	// Outcome is lockdb.OutcomeAcquired (new row or a free one),
	// lockdb.OutcomeStolen (another owner's expired lease) or lockdb.OutcomeRenewed (the
	// caller already held it: same token, later expiry) when granted. When
	// refused it is lockdb.OutcomeHeld (another owner's unexpired lease: LeaseRow
	// and Remaining describe it), lockdb.OutcomeQueued (free or lapsed, but
	// promised to the waiters queued for the key), or lockdb.OutcomeFree or
	// lockdb.OutcomeExpired for a row that another transaction was changing at
	// that moment (the attempt does not wait for it; try again), or
	// lockdb.OutcomeDelayed (free or lapsed, in its lock-delay until
	// DelayUntil). A busy attempt (OutcomeBusy) is returned by TryGrant as
	// found == false.
	Outcome string
	// Remaining is how long a refused holder's lease still runs, on the
	// database's clock.
	Remaining time.Duration
	// QueueLength is how many live waiters are queued for the key; set on
	// a refusal only.
	QueueLength int
	// DelayUntil is when the key's lock-delay ends (database clock); set
	// when the outcome is lockdb.OutcomeDelayed.
	DelayUntil *time.Time
}

// Granted reports whether the attempt took the key.
func (g Grant) Granted() bool {
	switch g.Outcome {
	case lockdb.OutcomeAcquired, lockdb.OutcomeStolen, lockdb.OutcomeRenewed:
		return true
	}
	return false
}

// acquireSQL calls the acquisition function in schema.sql (one attempt, one
// round trip, whatever its outcome; the function explains its paths). It
// reads only what a Lease needs: every column decoded is client CPU on the
// hottest path. A "busy" row is filtered out here, so it reads as no row.
const acquireSQL = `
SELECT a.lock_key, a.owner_id, a.fence_token, a.expires_at, a.ttl, a.outcome, a.remaining,
       a.queue_length, a.delay_until
FROM distributed_lock_acquire($1, $2, $3::bigint, $4::jsonb, $5, $6::jsonb, $7::boolean, $8::bigint) a
WHERE a.outcome <> '` + lockdb.OutcomeBusy + `'`

// TryGrant runs one acquisition attempt. found is false when nothing was
// granted and the key had no row when the attempt started (a first grant of
// it by someone else was in progress).
func TryGrant(ctx context.Context, db DBTX, p GrantParams) (g Grant, found bool, err error) {
	return scanGrant(db.QueryRow(ctx, acquireSQL, p.Key, p.Owner, p.TTL.Microseconds(),
		jsonArg(p.Metadata), p.Actor, jsonArg(p.Detail), p.LogGrants, p.LockDelay.Microseconds()))
}

func scanGrant(row pgx.Row) (g Grant, found bool, err error) {
	var queueLength *int32
	err = row.Scan(&g.Key, &g.Owner, &g.Token, &g.ExpiresAt, &g.TTL, &g.Outcome, &g.Remaining,
		&queueLength, &g.DelayUntil)
	if errors.Is(err, pgx.ErrNoRows) {
		return Grant{}, false, nil
	}
	if err != nil {
		return Grant{}, false, Interpret(err)
	}
	g.QueueLength = int(deref(queueLength))
	return g, true, nil
}

// getSQL reads one key from the readers' view, its remaining time from the
// database clock.
const getSQL = `SELECT ` + LockColumns + `
FROM distributed_lock_state l
WHERE l.lock_key = $1`

// Get reads key's lock row into a Row: lockdb.LockInfo, whose fields are
// LockColumns by their db tags, or a type of the caller's that has the
// same. found is false when the key has no row.
func Get[Row any](ctx context.Context, db DBTX, key string) (row Row, found bool, err error) {
	var none Row
	rows, err := db.Query(ctx, getSQL, key)
	if err != nil {
		return none, false, Interpret(err)
	}
	row, err = pgx.CollectExactlyOneRow(rows, pgx.RowToStructByName[Row])
	if errors.Is(err, pgx.ErrNoRows) {
		return none, false, nil
	}
	if err != nil {
		return none, false, fmt.Errorf("read lock %q: %w", key, Interpret(err))
	}
	return row, true, nil
}
