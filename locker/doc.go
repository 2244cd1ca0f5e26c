// Package locker gives services mutually exclusive, expiring, fenced locks
// kept in one PostgreSQL table, distributed_lock. It is the only package of
// lockctl a service imports: the schema is embedded in it ([Migrate]), and
// its errors, row type ([LockInfo]) and connection interface ([DBTX]) are
// its own.
//
// # Getting started
//
//	pool, err := pgxpool.New(ctx, os.Getenv("DATABASE_URL"))
//	...
//	if err := locker.Migrate(ctx, pool); err != nil { ... } // idempotent; or `lockctl migrate`
//	lk, err := locker.New(locker.Config{TTL: 30 * time.Second})
//	lease, err := lk.TryAcquire(ctx, pool, "billing:nightly", locker.NewOwnerID())
//	if errors.Is(err, locker.ErrHeld) { ... } // someone else has it: skip, or
//	// lease, err = lk.Acquire(ctx, pool, key, owner) to wait for it
//	ka := lk.Keepalive(ctx, pool, lease) // renews; ka.Context() ends if the lease is lost
//	// ... work under ka.Context(); fence every guarded write (see Fencing):
//	err = pgx.BeginFunc(ka.Context(), pool, func(tx pgx.Tx) error {
//		if err := locker.Fence(ka.Context(), tx, ka.Lease()); err != nil {
//			return err // lost: roll back
//		}
//		_, err := tx.Exec(ka.Context(), "UPDATE ... fence_token = $1", ka.Lease().Token)
//		return err
//	})
//	ka.Stop()
//	_, err = lk.Release(ctx, pool, ka.Lease())
//
// The examples below run each step against a real database: [Migrate],
// [Locker.TryAcquire], [Locker.Acquire], [Locker.Keepalive], [Fence] and
// [Locker.TryAcquire] inside your own transaction.
//
// Every write is a call of one of the protocol functions the schema defines
// (distributed_lock_acquire, _renew, _release, _fence, …; docs/protocol.md),
// which run as the role that migrated. A service's database role needs only
// EXECUTE on them and SELECT on distributed_lock: `lockctl grant ROLE --as
// service`. A role without them gets [ErrPermissionDenied].
//
// # The lease model
//
// A key is free, held, expired or delayed. Every grant gives the new
// holder a fencing token, drawn from one sequence, larger than every token
// granted on that key before:
//
//	             TryAcquire / Acquire: new token
//	┌──────┐ ──────────────────────────────────▶ ┌──────┐ ──┐ Renew, Keepalive:
//	│ free │                                     │ held │   │ same token,
//	└──────┘ ◀────────────────────────────────── └──────┘ ◀─┘ later expiry
//	   ▲        Release (owner + token),            │   ▲
//	   │        ForceRelease (operator)             │   │ TryAcquire by anyone:
//	   │                           expires_at passes│   │ "stolen", new larger
//	   │                    or ForceExpire (operator)   │ token
//	   │                                            ▼   │
//	   │         ForceRelease (operator)          ┌─────────┐
//	   └───────────────────────────────────────── │ expired │
//	                                              └─────────┘
//
// A lease may carry a lock-delay (Config.LockDelay, at most MaxLockDelay).
// When it ends without its holder's Release — it expires, or an operator
// force-expires or force-releases it — the key is delayed until its end
// plus the delay: nobody is granted it, not the next TryAcquire, not a
// waiter, not its own last owner, so a holder that was only slow has that
// long to notice and stop writing to a resource that cannot check tokens.
// A clean Release starts none. Waiters keep their place; the head is
// granted the key when the delay ends (or when an operator ends it early
// with [Locker.EndDelay]):
//
//	held ──expires_at passes, ForceExpire──▶ delayed ──delay ends──▶ expired
//	held ──ForceRelease──────────────────▶ delayed ──delay ends──▶ free
//	held ──Release───────────────────────────────────────────────▶ free
//
// A refused try says why: a [*HeldError] with the holder and its time
// left, the QueueLength, and DelayUntil for a delayed key.
//
// Only the database's clock is used: expires_at is set from the
// database's clock by the function that grants or renews, and "expired"
// means expires_at ≤ the database's now, read once per call through the
// protocol's one clock, distributed_lock_now() (docs/protocol.md). Skew
// between application hosts cannot make two owners believe they hold the
// same key.
//
// # Operations
//
//   - [Locker.TryAcquire] makes one attempt, in one statement (a call of
//     the protocol function distributed_lock_acquire): Acquired (new row or
//     free row), Stolen (another owner's expired lease), Renewed (the
//     caller already held it: same token, new expiry), or a [*HeldError]
//     naming the holder and its remaining time. It never waits for a row
//     lock: a row another transaction is changing right then (a grant or
//     release in progress, the holder's fenced write) is refused as busy.
//   - [Locker.Acquire] waits in the key's queue, first come first served
//     across processes (see "Fair queue" below). A TryAcquire does not jump
//     the queue: a free or lapsed key that live waiters are queued for is
//     refused with [HeldError.Queued].
//   - [Locker.TryAcquireAll] and [Locker.AcquireAll] take a set of keys for
//     one owner, all or none (see "Several keys at once" below);
//     [Locker.ReleaseAll] and [Locker.KeepaliveAll] release and keep the
//     set, one statement each.
//   - [Locker.Renew] extends a lease only while owner and token still match
//     and it has not expired; [Locker.Keepalive] renews in the background and
//     cancels the holder's context when the lease is lost or cannot be proven.
//   - [Locker.Release] frees a lease (owner and token must match); releasing a
//     lease that is no longer current returns a [*NotHeldError] and changes
//     nothing.
//   - [Locker.ForceExpire] and [Locker.ForceRelease] are operator actions. They
//     take the token the operator saw and act only if it is still current, so
//     a lock that changed hands meanwhile is not touched; each writes an event
//     naming [Config.Actor].
//   - [Locker.OpenSession] opens a [Session] that keeps any number of
//     leases with one heartbeat (see "Sessions" below).
//   - [Locker.Prune] deletes rows that have stayed free past a retention.
//   - [Migrate] creates or updates the tables (idempotent; at start-up is
//     fine), and [Locker.Get] reads one key's row as a [LockInfo].
//
// # Fencing
//
// A lease can be lost without its holder noticing at once: a GC pause, a
// frozen VM or a partition can outlast the TTL, and another owner takes the
// key. The holder's token is what protects the resource. Two ways:
//
// In the same database, call [Fence] inside the transaction that does the
// guarded writes. It locks the lock row FOR SHARE after checking owner, token
// and expiry; a take-over must lock the row for update, which it cannot do
// before the guarded transaction ends (TryAcquire refuses meanwhile, Acquire
// keeps trying). The guarded writes therefore commit only while
// the lease holds; a zombie's Fence fails and its transaction rolls back.
//
// Elsewhere, pass the token with every write and let the resource refuse
// older tokens, for example:
//
//	UPDATE report SET body = $1, fence_token = $2
//	WHERE id = $3 AND fence_token <= $2   -- 0 rows: a newer holder wrote; stop
//
// Tokens on a key strictly increase from grant to grant, even when a release
// comes in between (the row is kept, marked free, so the next grant still
// locks it before drawing a token) and across [Locker.Prune] (which waits for
// grants in flight before it deletes a row). Tokens are also unique across
// keys.
//
// # Fair queue
//
// A key's queue is its live waiter rows (distributed_lock_waiter, seen_until
// in the future) in waiter_id order, the id drawn when the waiter arrived.
// Why it holds:
//
//   - One entry, one transaction: Acquire's first call
//     (distributed_lock_enqueue) locks the key's row and either grants it (the
//     key is the caller's, or free or lapsed with nobody queued) or appends
//     the caller to the queue, with the lease it wants (TTL, metadata). It
//     also keeps the row's wake_until ahead of every live waiter's
//     seen_until, so a release knows, from a column it reads anyway, that it
//     must look at the queue. The uncontended cycle (wake_until unset) pays
//     nothing more than that check.
//   - Direct hand-off: a release (and force-release) that finds live
//     waiters grants the lease to the head in its own transaction, under the
//     row lock: new token, owner and lease from the waiter row (which it
//     consumes), the event a grant writes, and a NOTIFY whose payload
//     carries key, waiter id, owner, token and expiry, on the channel the
//     waiter's record names: its process's [Notifier.Channel]. The
//     Notifier gives it to that waiter alone, which holds the lease with no
//     further round trip; the process's other waiters of the key only learn
//     the new expiry. The process of the waiter now first in line hears it
//     too, and no other (docs/queue.md, "Who hears a wake-up"). Because
//     enqueue and release both lock the key's row, a waiter is either in the
//     queue when a release looks, or arrives after it and finds the key held
//     or free.
//   - The claim window: a handed lease first runs for [Config.ClaimWindow]
//     (at most the TTL), so a waiter that died after its last heartbeat
//     blocks the key that long at most; the waiter now first in line wakes
//     at that expiry, and its check hands the key to the next live head.
//     The claim is lazy: Acquire returns the handed lease at once (its
//     ExpiresAt is the end of the window, and [Lease.ValidFor] says so) and
//     the Locker renews it to the TTL after half the window only if it is
//     still held then; a Release or Renew (a Keepalive's first renewal)
//     before that is the claim. On a single connection, which the
//     background claim cannot share, Acquire claims at once. A hand-off
//     therefore costs the release's transaction and the next waiter's
//     enqueue, whatever the queue's length.
//   - Liveness: a [Notifier] refreshes the records of all its process's
//     waiters in one statement (distributed_lock_waiter_heartbeat), so the
//     cost of waiting does not grow with the number of waiters; a waiter
//     whose record lapsed (its process died) is skipped. Without a Notifier,
//     or while it is not listening, each waiter checks on its own every
//     [Config.WaitRecheck] at most (distributed_lock_waiter_poll), which
//     refreshes its record and finds a grant handed to it: its record asks
//     for a claim window longer by WaitRecheck, which the grant outlasts.
//   - Giving up: when ctx ends, Acquire takes its record out; a lease handed
//     to it meanwhile is released and passed on to the next waiter. The
//     enqueue call is not cut short by ctx (it is bounded on its own), so
//     Acquire always learns its waiter id and can take the record out.
//   - Crash safety: a hand-off commits durably even when the release was a
//     lazy one, since it is a grant whose token must never be drawn again.
//
// # Several keys at once
//
// [Locker.TryAcquireAll] takes up to [MaxKeys] keys in one transaction:
// every key, or none. It tries each key as TryAcquire would, the keys in
// sorted order, inside a subtransaction; the first key that cannot be
// taken rolls it back, so on a refusal no key is granted or renewed, no row
// is created and no event is written, and the [*HeldError] names that key.
// [Locker.AcquireAll] waits for the set: its one transaction locks the
// keys' rows in sorted order, and either grants them all or queues the set
// as one waiter, a record per key. The set is granted only when it can have
// every key at once: a release of one of its keys hands it every key in
// that transaction when it heads each key's queue and each other key is
// free (the other rows are locked SKIP LOCKED, so a hand-off never waits
// for a row out of order); until then a key it heads stays free and
// promised to it. What it guarantees:
//
//   - No partial hold, whatever fails or is cancelled: a grant of a set is
//     one transaction, and a set that gives up (ctx, a deadlock, an error)
//     takes its records out and releases keys handed to it and not yet
//     claimed; the keys it was first in line for pass to the next waiters.
//     A database restart mid-acquire rolls the transaction back whole.
//   - No ordering deadlocks among sets: every call locks rows in sorted key
//     order whatever order the keys are named in, and queue places are
//     drawn in one transaction, so two sets never wait for each other in a
//     cycle of queue places either.
//   - FIFO per key, as for single keys: a set does not jump a queue, and
//     nobody jumps the set's place in one.
//
// Config.LockDelay applies to every lease of a set. A set's keys are
// separate leases with tokens of their own; [Locker.KeepaliveAll] renews
// them together and cancels its context when any one is lost.
//
// # Sessions
//
// A process that keeps many leases opens one [Session] ([Locker.OpenSession])
// and binds its leases to it ([Session.Keepalive], [Session.KeepaliveAll]):
// one heartbeat statement per interval then keeps every one of them, as
// etcd's leases and Consul's sessions do, instead of a renewal per lease.
// Each heartbeat moves the session's expiry and every bound lease's to the
// same instant, so when the process dies, hangs or loses the database for
// the session's TTL, all of its leases lapse together, each as an
// expiry: its lock-delay follows, the next grant is a steal with a larger
// token. A bound lease is an ordinary lease row: [Locker.Renew],
// [Locker.Release], [Fence], ls and the console read it as any.
//
//	sess, err := lk.OpenSession(ctx, pool, owner)
//	defer sess.Close(ctx) // releases what is still bound
//	ka := sess.Keepalive(ctx, lease) // binds; ka.Context() ends if the lease or the session is lost
//
// A lease bound to a session is kept only while both are: each heartbeat
// names the leases the process keeps and says which it did not keep (one
// released, force-expired or taken, or bound elsewhere), and that
// Keepalive's Context ends with a [*LeaseLostError]; a session that could
// not heartbeat within its trust window, or that an operator ended
// ([Locker.EndSession], `lockctl end-session`), ends every bound Keepalive
// with [ErrSessionLost], even while a heartbeat is still out. `lockctl run`
// holds its keys in one session (a shared or permit lease with a Keepalive
// of its own: see below).
//
// What [Lease.ValidFor] promises for a bound lease: read it from the
// Keepalive ([Keepalive.Lease]), which times the lease from when this
// process sent the last statement that proved the session kept it (its
// binding, or a heartbeat that named it), and counts the session's TTL
// from there. The database keeps the lease at least that long unless its
// owner or an operator ends or moves it (a release, a force, a binding to
// another session): no heartbeat whose reply was lost, no binding dropped
// behind the process's back, can make it vouch longer. Its Context ends a
// safety margin sooner. Binding gives the lease the session's end, which
// may come before its grant's: the Lease you bound no longer speaks for
// it.
//
// # Shared leases and semaphores
//
// A key may have several holders instead of one owner (a writer's key that
// readers share, a pool of licences). [Locker.TryAcquireShared] takes it
// shared: any number of owners hold it at once, while nobody holds it
// exclusively. [Locker.TryAcquirePermit] takes one of its permits, 1 to
// [MaxPermits] ([ErrInvalidPermits] otherwise): a semaphore, held by at
// most that many owners at once. [Locker.AcquireShared] and
// [Locker.AcquirePermit] wait in the key's one queue, as [Locker.Acquire]
// does, until granted or ctx ends (a [*GaveUpError]).
//
//	lease, err := lk.TryAcquirePermit(ctx, pool, "licences:builder", owner, 3)
//	// lease.Mode == ModeSemaphore, lease.Permits == 3, a token of its own
//
// Each holder has a [Lease] of its own, with its own token and TTL, which
// [Locker.Renew], [Locker.Keepalive], [Locker.Release] and [Fence] take as
// they take a lease held alone. While a key has holders its row is their
// group's: Owner "*", [LockInfo.Mode] and [LockInfo.Permits] say how it is
// held, and its token is the group's own. [Locker.ForceExpire] and
// [Locker.ForceRelease] end one holder's lease by its token, or every
// holder's by the group's token.
//
// A refusal is a [*HeldError] (a lease held alone runs, every permit is
// taken, or waiters are queued for the key: a writer waiting for readers
// is not overtaken by readers after it) or a [*ConflictError] (the holders
// hold the key shared against a permit, the other way round, or as a
// semaphore of other permits); both match [ErrHeld]. Tokens stay ordered
// across modes: a grant of the key alone has a token above every holder's
// before it, and a holder's is above that of every grant of the key alone
// before it.
//
// Not there yet: a [Session] does not bind a holder's lease (keep it with
// [Locker.Keepalive]); sets ([Locker.TryAcquireAll]) take keys held alone
// only.
//
// # Deadlocks
//
// A waiting Acquire or AcquireAll whose wait would close a cycle of waits
// (A holds X and waits for Y while B holds Y and waits for X; any length,
// across processes) fails with a [*DeadlockError] ([ErrDeadlock]) naming
// the cycle, owners and keys in order. The wait-for graph has owners as
// nodes: a waiter waits for its key's holder and for every waiter ahead of
// it in the key's queue; a waiting set is one waiter. Of the waits on a
// cycle the youngest is refused, the one that closed it, as PostgreSQL's
// lock manager refuses the wait that closes a cycle; the others keep
// waiting. A cycle closed by one wait is found as it queues. Two waits
// that close one together may not see each other as they queue, so every
// waiter checks once [DeadlockCheck] (half a second) after it queued: a
// deadlock is reported within a second of the wait that closed it.
//
// # Failover
//
// Tokens also rise across a promotion, with no step by an operator, even
// when the promoted standby never received the old primary's last grants.
// A token is epoch << 40 + a count: the epoch is the WAL timeline the
// server writes on plus a base, and the first grant a server makes on a
// timeline it has not drawn tokens on moves the sequence to at least
// epoch << 40 (schema.sql, distributed_lock_advance_epoch). Why it holds:
//
//   - a promotion always starts a timeline higher than every timeline its
//     ancestors wrote on, so the promoted server's epoch is higher than the
//     epoch of every token the old primary handed out, whatever WAL it
//     missed; and within a timeline the sequence only rises;
//   - the timeline is read from the name of the WAL file being written,
//     which PostgreSQL (15 and later) names by the insert timeline, so it is
//     right from the first transaction after a promotion; it costs no I/O,
//     and the check reads one small row;
//   - the move happens once per timeline under the epoch row's lock, so no
//     grant on the new timeline draws a token before it;
//   - a database restored from a dump into another cluster (whose timelines
//     start again at 1) sees a row written by another system identifier
//     and rebases: base becomes the dumped epoch, so its tokens stay above
//     the dumped ones, and every server of the new cluster computes the same
//     base from the same restored row.
//
// Limits: a timeline can hand out 2^40 tokens before its count runs into
// the next epoch (then order across the next promotion rests on the
// standby having received the sequence's last value); a server started
// from a file-level copy without promotion keeps the copy's timeline and is
// not covered. `lockctl migrate` moves an existing database's tokens into
// the epoch at once; they only ever rise.
//
// Releases are not lost either when the server has synchronous standbys
// (synchronous_standby_names): the release function then commits with the
// session's synchronous_commit instead of lazily, so an acknowledged
// release is on a standby (see [Config.DurableRelease]). With only
// asynchronous standbys, grants, renewals and releases the standby missed
// are lost on failover: a holder then finds its lease gone (renewals fail
// with [ErrNotHeld]) or a released lease held until its TTL.
//
// A pool opened on a multi-host DSN (host=a,b target_session_attrs=read-write,
// which pgx reads like libpq) reaches whichever server is primary: after a
// promotion, a call on a connection to the old primary fails with
// [ErrUnavailable] and the next call connects to the new one. A Keepalive
// keeps renewing through this, within its trust window. docs/failover.md
// has the operator's side.
//
// # Keepalive's trust window
//
// A lease granted or renewed by a statement sent at local time s is trusted
// until s + TTL − SafetyMargin on this process's monotonic clock. The
// database set expires_at after s, so this never overstates the lease,
// whatever the two clocks say. When renewals fail (database unreachable) and
// the window passes, the Keepalive's context is cancelled: a lease that
// cannot be proven is treated as lost, because another owner may take it as
// soon as it expires.
//
// # Inside your transaction
//
// Every operation takes a [DBTX]: a *pgxpool.Pool, a *pgx.Conn or a
// pgx.Tx. TryAcquire inside the caller's transaction makes the grant commit or
// roll back with the caller's work (use READ COMMITTED; REPEATABLE READ or
// SERIALIZABLE can fail with a serialization error when the row changes under
// it). A refused grant is not an error in SQL terms: the transaction stays
// usable. Acquire (waiting), Keepalive and Prune belong on a pool.
//
// # Errors
//
// Branch with errors.Is on [ErrHeld], [ErrNotHeld], [ErrQueueLost],
// [ErrLeaseLost], [ErrDeadlock], [ErrInvalidKey], [ErrInvalidKeys],
// [ErrInvalidOwner], [ErrInvalidTTL], [ErrTooLarge], and on the database
// errors a driver error is mapped to: [ErrNotMigrated], [ErrReadOnly],
// [ErrPermissionDenied], [ErrLockTimeout], [ErrStatementTimeout],
// [ErrUnavailable], [ErrInvalidValue], [ErrPoolerStatements],
// [ErrPoolerStartupParameter]; [Migrate] also fails
// with [ErrCannotAdopt], [ErrSchemaNewer], [ErrSchemaUnknown], [ErrSchemaOpen] (another role
// may create objects in the lock schema) or [ErrLockTimeout] (it waited a
// minute for the migrate lock, whose holders it names). The typed errors [*HeldError]
// and [*NotHeldError] carry the current holder; [*LeaseLostError] says why a
// Keepalive lost its lease, [*DeadlockError] the cycle a refused wait
// would have closed, and [*GaveUpError] whether a waiting Acquire that gave
// up may have been handed a lease; [Locker.Get] reads a key's row.
//
// # Behind a connection pooler
//
// Through PgBouncer in transaction mode, run the pool in a query exec mode
// that sends each statement whole (default_query_exec_mode=exec in the DSN;
// pgx's default caches named statements the pooler hands to other clients:
// [ErrPoolerStatements]), and give the [Notifier] a direct or session-pooled
// connection with a Probe through the pool ([NotifierConfig]): LISTEN through
// a transaction pooler hears nothing, and [Notifier.Live] says whether the
// probe arrived. docs/pooling.md has the measurements.
package locker
