package store

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/lockctl/lockctl/internal/lockdb"
)

// SharedGrant is the result of a shared or permit attempt: the holder's
// lease, or, refused, what refused it (Grant's fields), and the key's mode.
type SharedGrant struct {
	Grant
	// Mode is the key's lock_mode after the attempt (lockdb.ModeShared,
	// lockdb.ModeSemaphore, or lockdb.ModeExclusive when an exclusive lease
	// refused it); Permits its semaphore's permits (0: none).
	Mode    string
	Permits int
	// Holders is, on a refusal, how many leases held the key.
	Holders int
}

// acquireSharedSQL calls distributed_lock_acquire_shared (11_shared.sql):
// one attempt, one round trip. $4 NULL asks for a shared lease, N for one
// of N permits. A "busy" row reads as no row, as acquireSQL's.
const acquireSharedSQL = `
SELECT a.lock_key, a.owner_id, a.fence_token, a.expires_at, a.ttl, a.outcome, a.remaining,
       a.queue_length, a.lock_mode, a.key_permits, a.holders
FROM distributed_lock_acquire_shared($1, $2, $3::bigint, $4::integer, $5::jsonb, $6, $7::jsonb, $8::boolean) a
WHERE a.outcome <> '` + lockdb.OutcomeBusy + `'`

// TryGrantShared runs one attempt to take p.Key shared (permits 0) or as
// one of permits. found is false when another transaction was changing
// the key's row (try again shortly).
func TryGrantShared(ctx context.Context, db DBTX, p GrantParams, permits int) (g SharedGrant, found bool, err error) {
	n := permitsArg(permits)
	// A refusal by a group (queued, conflict) names no lease: NULLs.
	var owner *string
	var token *int64
	var expiresAt *time.Time
	var ttl, remaining *time.Duration
	var queueLength, keyPermits, holders *int32
	err = db.QueryRow(ctx, acquireSharedSQL, p.Key, p.Owner, p.TTL.Microseconds(), n,
		jsonArg(p.Metadata), p.Actor, jsonArg(p.Detail), p.LogGrants).Scan(
		&g.Key, &owner, &token, &expiresAt, &ttl, &g.Outcome, &remaining,
		&queueLength, &g.Mode, &keyPermits, &holders)
	if errors.Is(err, pgx.ErrNoRows) {
		return SharedGrant{}, false, nil
	}
	if err != nil {
		return SharedGrant{}, false, Interpret(err)
	}
	g.Owner, g.Token, g.ExpiresAt, g.TTL, g.Remaining = deref(owner), deref(token), deref(expiresAt), deref(ttl), deref(remaining)
	g.QueueLength, g.Permits, g.Holders = int(deref(queueLength)), int(deref(keyPermits)), int(deref(holders))
	return g, true, nil
}
