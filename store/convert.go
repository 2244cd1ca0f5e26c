package store

import (
	"context"
	"time"

	"github.com/lockctl/lockctl/internal/lockdb"
)

// The conversions of 17_convert.sql: distributed_lock_downgrade and
// distributed_lock_upgrade.
const (
	// downgradeSQL keeps only a downgrade: 'not_held' reads as no row.
	downgradeSQL = `
SELECT d.lock_key, d.owner_id, d.fence_token, d.expires_at, d.ttl
FROM distributed_lock_downgrade($1, $2, $3, $4::bigint, $5) d WHERE d.outcome = '` + lockdb.OutcomeDowngraded + `'`
	upgradeSQL = `
SELECT u.lock_key, u.owner_id, u.fence_token, u.expires_at, u.ttl, u.outcome, u.remaining, u.waiter_id, u.db_now,
       u.queue_position, u.queue_length, u.delay_until, u.cycle
FROM distributed_lock_upgrade($1, $2, $3, $4::bigint, $5::bigint, $6::bigint, $7::boolean, $8, $9) u`
)

// Downgrade turns ref's running exclusive lease into a shared lease of
// ttl, with a new token, in one transaction; readers queued at the head
// are granted beside it. ok is false when ref is not the caller's running
// exclusive lease.
func Downgrade(ctx context.Context, db DBTX, ref LeaseRef, ttl time.Duration, actor string) (LeaseRow, bool, error) {
	return scanLeaseRow(db.QueryRow(ctx, downgradeSQL, ref.Key, ref.Owner, ref.Token, ttl.Microseconds(), nullIfEmpty(actor)))
}

// UpgradeParams is an upgrade of From, a shared lease or a permit, to the
// key's exclusive lease of Queue's TTL.
type UpgradeParams struct {
	Queue QueueParams
	From  int64
	// Wait queues the caller when it cannot have the key at once.
	Wait bool
}

// Upgrade asks for p.From's key exclusively (distributed_lock_upgrade): a
// grant (Granted, the shared lease ended), or with Wait the caller queued
// (lockdb.OutcomeQueued, WaiterID set: wait as Enqueue's caller does) or
// refused (lockdb.OutcomeDeadlock); without Wait, lockdb.OutcomeHeld or
// lockdb.OutcomeQueued; lockdb.OutcomeNotHeld when From is not the
// caller's running holder's lease.
func Upgrade(ctx context.Context, db DBTX, p UpgradeParams) (Queued, error) {
	q := p.Queue
	queued, _, err := scanQueued(db.QueryRow(ctx, upgradeSQL, q.Key, q.Owner, p.From, q.TTL.Microseconds(),
		q.ClaimWindow.Microseconds(), q.SeenFor.Microseconds(), p.Wait, nullIfEmpty(q.Actor), channelArg(q.WakeChannel)))
	return queued, err
}
