package lockdb

// What the protocol functions of schema.sql report, as the SQL spells it
// (docs/protocol.md lists each function's outcomes; store/protocol's tests
// hold these constants to the page and the page to the functions). This is
// the one Go definition: locker's Outcome values, store's checks of a
// function's result and the CLI's JSON use these.
const (
	// Grants (distributed_lock_acquire, _enqueue, _waiter_poll).
	OutcomeAcquired = "acquired" // a new row or a free one: a new token
	OutcomeStolen   = "stolen"   // another owner's expired lease: a new, larger token
	OutcomeRenewed  = "renewed"  // already the caller's: same token, later expiry (also _renew)

	// Refusals of an attempt. Free and expired: the row was being changed by
	// another transaction, which the attempt does not wait for. Busy: the
	// key had no row and another transaction's first grant of it was in
	// flight.
	OutcomeHeld    = "held"    // another owner's unexpired lease
	OutcomeDelayed = "delayed" // free or lapsed, but its last lease's lock-delay still runs
	OutcomeQueued  = "queued"  // free or lapsed, but promised to the waiters queued for it; for a waiter: still waiting
	OutcomeFree    = "free"
	OutcomeExpired = "expired"
	OutcomeBusy    = "busy"
	OutcomeGone    = "gone" // a waiter's record is gone with no grant for it (enqueue again); a session is gone
	// A waiter's wait would close a cycle of waits of which it is the
	// youngest: it is refused, its records removed (_enqueue, _enqueue_all,
	// _waiter_poll, _waiter_poll_all).
	OutcomeDeadlock = "deadlock"
	// A shared or semaphore grant refused because the key's holders hold
	// it in another mode, or as a semaphore of other permits
	// (distributed_lock_acquire_shared).
	OutcomeConflict = "conflict"

	// Ends of a lease (distributed_lock_release, _force_expire,
	// _force_release), and their refusal.
	OutcomeReleased      = "released"
	OutcomeForceExpired  = "force_expired"
	OutcomeForceReleased = "force_released"
	OutcomeNotHeld       = "not_held" // the lease named is not the current one

	// What distributed_lock_end_delay did.
	OutcomeDelayEnded = "delay_ended" // the key's lock-delay was ended early
	OutcomeNotDelayed = "not_delayed" // the key was not in a lock-delay

	// What distributed_lock_revoke did: asked the holder to let go (or
	// OutcomeNotHeld: that grant is not the current, running one).
	OutcomeRevoked = "revoked"

	// What distributed_lock_downgrade did: the exclusive lease is now a
	// shared one, with a new token (or OutcomeNotHeld).
	OutcomeDowngraded = "downgraded"
	// What distributed_lock_hold_at_least did: the lease keeps its key at
	// least until kept_until (or OutcomeNotHeld).
	OutcomeAtLeast = "at_least"

	// What the session functions did (10_session.sql): a heartbeat renews
	// (OutcomeRenewed), a bind binds, a close closes, an operator's end
	// ends; a session that lapsed is OutcomeExpired, one that does not
	// exist (closed, ended, pruned, or another owner's) OutcomeGone.
	OutcomeBound  = "bound"
	OutcomeClosed = "closed"
	OutcomeEnded  = "ended"

	// A waiter's claim of a hand-off (distributed_lock_waiter_claim) found
	// no running grant to its record: the NOTIFY that sent it was not one.
	OutcomeNotHanded = "not_handed"

	// What distributed_lock_waiter_leave did.
	LeftQueue = "left"      // took the waiter out of the queue
	PassedOn  = "passed_on" // released a lease handed to it, unclaimed, and passed it on
	LeftNone  = "none"      // nothing: the record was gone
)

// Kinds of the events in distributed_lock_event: the outcomes that change a
// lease, a refused stale write, and a wait refused as a deadlock or given
// up.
const (
	EventAcquired           = OutcomeAcquired
	EventStolen             = OutcomeStolen
	EventReleased           = OutcomeReleased
	EventForceExpired       = OutcomeForceExpired
	EventForceReleased      = OutcomeForceReleased
	EventStaleWriteRejected = "stale_write_rejected"
	EventDelayEnded         = OutcomeDelayEnded
	// A waiter's records removed because its wait closed a cycle
	// (OutcomeDeadlock): one event per key it waited for, detail
	// {"cycle": [{"owner", "key"}, …]} as the refusal returned it.
	EventDeadlockRefused = "deadlock_refused"
	// An operator ended a session (distributed_lock_end_session): no key,
	// detail {"session_id", "host", "pid", "leases", "reason"}; each lease
	// it ended has its own force_expired event.
	EventSessionEnded = "session_ended"
	// A free semaphore key was taken with other permits than it had:
	// detail {"permits", "previous_permits"}.
	EventPermitsChanged = "permits_changed"
	// A waiter left the queue without a grant (its Acquire gave up),
	// logged when its record logs grants: detail {"waited_ms",
	// "waiter_id"}, the wait as a hand-off's grant records it.
	EventGaveUp = "gave_up"
	// An operator asked a holder to let go (distributed_lock_revoke):
	// detail {"reason", "force_at"}.
	EventRevoked = OutcomeRevoked
	// A holder's exclusive lease became a shared one
	// (distributed_lock_downgrade): the event names the new lease's token,
	// previous_token the exclusive one; detail {"mode", "slot"}.
	EventDowngraded = OutcomeDowngraded
	// A holder's shared lease or permit ended for its upgrade, in the
	// transaction that grants it the key (logged after this, as a grant):
	// the event names the ended lease; detail {"mode", "permits", "slot",
	// "waiter_id"}.
	EventUpgraded = "upgraded"
)

// How a key is held (distributed_lock.lock_mode): by one owner, by any
// number of shared holders, or by at most its permits' holders.
const (
	ModeExclusive = "exclusive"
	ModeShared    = "shared"
	ModeSemaphore = "semaphore"
)

// GroupOwner is the owner_id of a shared or semaphore key's lock row while
// its holders hold it: the row is the group's, nobody's own lease. It is a
// reserved word: no caller may name it as an owner (ValidateOwner,
// distributed_lock_reserved).
const GroupOwner = "*"
