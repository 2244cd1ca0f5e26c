// Package locker gives services expiring, fenced locks kept in one
// PostgreSQL table, distributed_lock. It is the only package of lockctl a
// service imports: the schema is embedded in it ([Migrate]).
//
// # One request
//
// Every acquire is one [Request] to [Locker.Acquire]: its keys (one, or up
// to [MaxKeys] taken all or none), each key's mode (exclusive, shared, or
// one of a semaphore's permits), the owner, the TTL, a lock-delay, and how
// long to wait. It returns one [Lease] per key.
//
//	leases, err := lk.Acquire(ctx, pool, locker.Request{
//		Keys: locker.Keys("billing:nightly"), Owner: owner, Wait: time.Minute,
//	})
//	if errors.Is(err, locker.ErrHeld) { ... } // someone else has it
//	ka := lk.Keepalive(ctx, pool, leases...)   // ka.Context() ends if a lease is lost
//	defer lk.Release(ctx, pool, ka.Leases()...)
//	defer ka.Stop()
//
// Every write is a call of a protocol function (docs/protocol.md): a
// service's role needs `lockctl grant ROLE --as service` only.
//
// # The lease model
//
// A key is free, held, expired, delayed or kept. Every grant draws a
// fencing token larger than every token granted on that key before, across
// releases, pruning and failover (docs/design.md, "Fencing tokens"):
//
//	free ──Acquire: new token──▶ held ──Renew: same token, later expiry──▶ held
//	held ──Release──▶ free
//	held ──expires_at passes──▶ expired ──Acquire by anyone: stolen, new token──▶ held
//	held ──expires, or is forced, with a lock-delay──▶ delayed ──delay ends──▶ expired
//	held ──Release before its Request.AtLeast──▶ kept ──at-least point──▶ free
//
// Only the database's clock decides (distributed_lock_now(), read once per
// call). A lock-delay ([Request.LockDelay]) keeps a key that lost its
// holder without a Release from everyone that long, so a holder that was
// only slow can stop writing to a resource that cannot check tokens.
//
// An attempt (Wait 0) is one statement, and may run in the caller's
// transaction. A wait queues first come first served across processes; a
// release hands the lease to the head of the queue in its own transaction,
// and a [Notifier] wakes that waiter alone (docs/queue.md). A shared key has
// any number of holders, a semaphore at most its permits, each with a lease
// and token of its own. A lease changes mode with a new token:
//
//	held ──Downgrade: at once, queued readers join──▶ shared
//	shared ──Upgrade: once the other holders end (it queues)──▶ held
//
// # Fencing
//
// A lease can be lost without its holder noticing: a pause or a partition
// can outlast the TTL. In the same database, call [Fence] inside the
// transaction that does the guarded writes: it locks the lock row FOR SHARE
// until that transaction ends, so the writes commit only while the lease
// holds. Elsewhere, pass the token with every write and let the resource
// refuse older ones:
//
//	UPDATE report SET body = $1, fence_token = $2
//	WHERE id = $3 AND fence_token <= $2   -- 0 rows: a newer holder wrote; stop
//
// # Keeping leases
//
// [Locker.Keepalive] renews leases in the background. A lease proven by a
// statement sent at local time s is trusted until s + TTL − SafetyMargin on
// this process's monotonic clock (the database set expires_at after s); one
// nothing has proven yet is renewed before Keepalive returns. When renewals
// fail and the window passes, its Context ends with [ErrLeaseLost]. A revoke
// reaches the holder at the next renewal (Keepalive.Revoked). A [Session]
// keeps many leases with one heartbeat; they lapse together when the process
// dies.
//
// # Errors
//
// Refusals and losses are an [*Error]: errors.Is on its Kind ([ErrHeld],
// [ErrNotHeld], [ErrDeadlock], [ErrLeaseLost]) says what happened, and its
// fields say what the database said (the holder, its time left, the queue,
// the lock-delay, the cycle). A wait that ended first matches [ErrHeld] and
// wraps ctx's error. A bad argument is [ErrInvalid], refused before
// anything is sent; a driver error is mapped to what it means
// ([ErrUnavailable], [ErrNotMigrated], [ErrPermissionDenied], …).
//
// Behind a transaction pooler, see docs/pooling.md; failover,
// docs/failover.md.
package locker
