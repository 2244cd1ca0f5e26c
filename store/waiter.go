package store

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/lockctl/lockctl/internal/lockdb"
)

// The fair queue's functions in schema.sql (distributed_lock_enqueue and the
// distributed_lock_waiter_* functions).
const (
	enqueueSQL = `
SELECT e.lock_key, e.owner_id, e.fence_token, e.expires_at, e.ttl, e.outcome, e.remaining, e.waiter_id, e.db_now,
       e.queue_position, e.queue_length, e.delay_until, e.cycle
FROM distributed_lock_enqueue($1, $2, $3::bigint, $4::bigint, $5::bigint, $6::jsonb, $7, $8::jsonb, $9::boolean,
                              $10::bigint, $11) e`
	pollSQL = `
SELECT p.lock_key, p.owner_id, p.fence_token, p.expires_at, p.ttl, p.outcome, p.remaining, p.waiter_id, p.db_now,
       p.queue_position, p.queue_length, p.delay_until, p.cycle
FROM distributed_lock_waiter_poll($1, $2::bigint, $3::bigint) p`
	enqueueSharedSQL = `
SELECT e.lock_key, e.owner_id, e.fence_token, e.expires_at, e.ttl, e.outcome, e.remaining, e.waiter_id, e.db_now,
       e.queue_position, e.queue_length, e.delay_until, e.cycle
FROM distributed_lock_enqueue_shared($1, $2, $3::bigint, $4::integer, $5::bigint, $6::bigint, $7::jsonb, $8,
                                     $9::jsonb, $10::boolean, $11, $12::boolean) e`
	// claimSQL keeps only a claim: 'not_handed' reads as no row.
	claimSQL = `
SELECT c.lock_key, c.owner_id, c.fence_token, c.expires_at, c.ttl, c.outcome
FROM distributed_lock_waiter_claim($1, $2::bigint) c WHERE c.outcome <> '` + lockdb.OutcomeNotHanded + `'`
	heartbeatSQL = `SELECT id FROM distributed_lock_waiter_heartbeat($1::bigint[], $2::bigint) id`
	leaveSQL     = `SELECT distributed_lock_waiter_leave($1, $2::bigint, $3::boolean, $4)`
)

// HandOffChannel is the LISTEN channel on which a hand-off announces its
// grant to a waiter whose record names no wake channel (payload: HandOff
// as JSON); a record that names one is announced there (see WakeChannel).
const HandOffChannel = "distributed_lock_handoff"

// QueueParams is one waiting acquirer's entry into a key's queue.
type QueueParams struct {
	GrantParams
	// ClaimWindow bounds the first lease of a hand-off (the waiter renews it
	// to TTL, its claim).
	ClaimWindow time.Duration
	// SeenFor is how long the waiter record stays live unless refreshed.
	SeenFor time.Duration
	// WakeChannel is the channel the waiter's process LISTENs on, which its
	// record names: hand-offs to it and wake-ups of its key are sent there
	// (NewWakeChannel). "": the shared channels, HandOffChannel and
	// NotifyChannel.
	WakeChannel string
	// Shared queues for a shared lease, Permits > 0 for one of that many
	// permits (distributed_lock_enqueue_shared); neither: the key itself.
	Shared  bool
	Permits int
}

// Queued is the answer of Enqueue or Poll: a grant (Granted), or the key's
// row while the caller waits (lockdb.OutcomeQueued, WaiterID set),
// lockdb.OutcomeGone, or lockdb.OutcomeDeadlock (Cycle set).
type Queued struct {
	Grant
	WaiterID int64
	// DBNow is the database's clock as the call returned.
	DBNow time.Time
	// Position is the waiter's place in the queue (1: the head) while
	// queued; Grant.QueueLength and Grant.DelayUntil say the rest.
	Position int
	// Cycle is the cycle of waits a deadlock refusal names, the caller's
	// step first.
	Cycle []CycleStep
}

// CycleStep is one wait of a deadlock's cycle: Owner waits for Key, which
// the next step's owner holds or is queued ahead for (the last step's
// owner waits for the first's).
type CycleStep struct {
	Owner string `json:"owner"`
	Key   string `json:"key"`
}

// Enqueue grants p's key or queues p, in one transaction (see
// distributed_lock_enqueue). found is false when the key's first grant by
// another transaction kept it busy: try again.
func Enqueue(ctx context.Context, db DBTX, p QueueParams) (q Queued, found bool, err error) {
	if p.Shared || p.Permits > 0 {
		return scanQueued(db.QueryRow(ctx, enqueueSharedSQL, p.Key, p.Owner, p.TTL.Microseconds(), permitsArg(p.Permits),
			p.ClaimWindow.Microseconds(), p.SeenFor.Microseconds(), jsonArg(p.Metadata), p.Actor, jsonArg(p.Detail),
			p.LogGrants, channelArg(p.WakeChannel), standalone(db)))
	}
	return scanQueued(db.QueryRow(ctx, enqueueSQL, p.Key, p.Owner, p.TTL.Microseconds(),
		p.ClaimWindow.Microseconds(), p.SeenFor.Microseconds(), jsonArg(p.Metadata), p.Actor, jsonArg(p.Detail), p.LogGrants,
		p.LockDelay.Microseconds(), channelArg(p.WakeChannel)))
}

// Poll checks waiter id of key: granted (handed to it, or taken now as the
// head of a free key), still queued (its record refreshed for seenFor), or
// gone.
func Poll(ctx context.Context, db DBTX, key string, id int64, seenFor time.Duration) (Queued, error) {
	q, _, err := scanQueued(db.QueryRow(ctx, pollSQL, key, id, seenFor.Microseconds()))
	return q, err
}

// Claim asks whether waiter id of key, queued by this connection's role,
// was handed the key (or a slot of it), and if so claims the lease (renewed
// to its full TTL) in the same call: what a waiter does when a NOTIFY says
// it was handed the key, which anyone may send, so the notification is
// never the grant. ok is false when no running grant to id is the
// caller's: the waiter waits on. kind is the grant's (lockdb.OutcomeAcquired
// or lockdb.OutcomeStolen).
func Claim(ctx context.Context, db DBTX, key string, id int64) (row LeaseRow, kind string, ok bool, err error) {
	err = db.QueryRow(ctx, claimSQL, key, id).Scan(&row.Key, &row.Owner, &row.Token, &row.ExpiresAt, &row.TTL, &kind)
	if errors.Is(err, pgx.ErrNoRows) {
		return LeaseRow{}, "", false, nil
	}
	if err != nil {
		return LeaseRow{}, "", false, Interpret(err)
	}
	return row, kind, true, nil
}

func scanQueued(row pgx.Row) (q Queued, found bool, err error) {
	q, err = scanQueuedRow(row)
	if errors.Is(err, pgx.ErrNoRows) {
		return Queued{}, false, nil
	}
	if err != nil {
		return Queued{}, false, Interpret(err)
	}
	if q.Outcome == lockdb.OutcomeBusy {
		return Queued{}, false, nil
	}
	return q, true, nil
}

// scanQueuedRow reads one row of enqueue's or a waiter check's columns.
func scanQueuedRow(row pgx.Row) (q Queued, err error) {
	var token *int64
	var owner *string
	var expires, now *time.Time
	var ttl, remaining *time.Duration
	var id *int64
	var position, length *int32
	if err = row.Scan(&q.Key, &owner, &token, &expires, &ttl, &q.Outcome, &remaining, &id, &now,
		&position, &length, &q.DelayUntil, &q.Cycle); err != nil {
		return Queued{}, err
	}
	q.Owner, q.Token, q.ExpiresAt, q.TTL = deref(owner), deref(token), deref(expires), deref(ttl)
	q.Remaining, q.WaiterID, q.DBNow = deref(remaining), deref(id), deref(now)
	q.Position, q.QueueLength = int(deref(position)), int(deref(length))
	return q, nil
}

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}

// Heartbeat keeps the waiter records ids live for another seenFor, in one
// statement, and returns the ids it did not find (handed a lease, or gone)
// and those at the head of a key nobody holds, which no release will hand
// on: each of them should check (Poll).
func Heartbeat(ctx context.Context, db DBTX, ids []int64, seenFor time.Duration) ([]int64, error) {
	rows, err := db.Query(ctx, heartbeatSQL, ids, seenFor.Microseconds())
	if err != nil {
		return nil, Interpret(err)
	}
	missing, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	return missing, Interpret(err)
}

// Leave takes waiter id out of key's queue; a lease handed to it and not yet
// claimed is released (logged with log, by actor) and passed on. It returns
// what it did: lockdb.LeftQueue, lockdb.PassedOn or lockdb.LeftNone.
func Leave(ctx context.Context, db DBTX, key string, id int64, log bool, actor string) (string, error) {
	var did string
	if err := db.QueryRow(ctx, leaveSQL, key, id, log, actor).Scan(&did); err != nil {
		return "", Interpret(err)
	}
	return did, nil
}

// permitsArg is a semaphore's permits as SQL: NULL (shared) for 0.
func permitsArg(permits int) *int32 {
	if permits <= 0 {
		return nil
	}
	n := int32(permits)
	return &n
}
