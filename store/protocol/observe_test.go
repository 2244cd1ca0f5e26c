package protocol_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// lockState is a key's row as read after a call. The *In and *Ago fields are
// its times relative to the database's clock at the read.
type lockState struct {
	Owner         string         `db:"owner_id"`
	Token         int64          `db:"fence_token"`
	ExpiresAt     time.Time      `db:"expires_at"`
	TTL           time.Duration  `db:"ttl"`
	AcquiredAt    time.Time      `db:"acquired_at"`
	RenewedAt     *time.Time     `db:"renewed_at"`
	RenewCount    int32          `db:"renew_count"`
	ReleasedAt    *time.Time     `db:"released_at"`
	GrantKind     string         `db:"grant_kind"`
	PreviousOwner *string        `db:"previous_owner"`
	PreviousToken *int64         `db:"previous_token"`
	Metadata      map[string]any `db:"metadata"`
	WakeUntil     *time.Time     `db:"wake_until"`
	HandedTo      *int64         `db:"handed_to"`
	LockDelay     time.Duration  `db:"lock_delay"`
	DelayUntil    *time.Time     `db:"delay_until"`
	KeptUntil     *time.Time     `db:"kept_until"`
	Mode          string         `db:"lock_mode"`
	Permits       *int32         `db:"permits"`
	// GroupEnd: expires_at is a running group's far-future end, which
	// ExpiresIn (zero then) could not hold.
	GroupEnd bool `db:"group_end"`

	ExpiresIn   time.Duration  `db:"expires_in"`
	AcquiredAgo time.Duration  `db:"acquired_ago"`
	ReleasedAgo *time.Duration `db:"released_ago"`
	RenewedAgo  *time.Duration `db:"renewed_ago"`
	WakeIn      *time.Duration `db:"wake_in"`
	DelayIn     *time.Duration `db:"delay_in"`
	KeptIn      *time.Duration `db:"kept_in"`
	ReadAt      time.Time      `db:"read_at"` // the database's clock at the read
}

func (l lockState) String() string {
	return fmt.Sprintf("{%s %s, owner %s, token %d, expires %v (in %v), ttl %v, acquired %v, renewed %s ×%d, released %s, "+
		"kind %s, previous %s/%s, metadata %v, wake_until %s, handed_to %s, lock_delay %v, delay_until %s, kept_until %s}",
		l.Mode, show(l.Permits), l.Owner, l.Token, l.ExpiresAt, l.ExpiresIn, l.TTL, l.AcquiredAt, show(l.RenewedAt), l.RenewCount,
		show(l.ReleasedAt), l.GrantKind, show(l.PreviousOwner), show(l.PreviousToken), l.Metadata,
		show(l.WakeUntil), show(l.HandedTo), l.LockDelay, show(l.DelayUntil), show(l.KeptUntil))
}

// stored is the row without its clock-relative fields: what "untouched"
// compares.
func (l lockState) stored() lockState {
	l.ExpiresIn, l.AcquiredAgo, l.ReleasedAgo, l.RenewedAgo, l.WakeIn, l.DelayIn, l.KeptIn, l.ReadAt = 0, 0, nil, nil, nil, nil, nil, time.Time{}
	return l
}

type waiterState struct {
	ID        int64          `db:"waiter_id"`
	Owner     string         `db:"owner_id"`
	SeenIn    time.Duration  `db:"seen_in"`
	TTL       *time.Duration `db:"ttl"`
	Claim     *time.Duration `db:"claim_window"`
	Metadata  any            `db:"metadata"`
	LogGrants bool           `db:"log_grants"`
	Actor     *string        `db:"actor"`
	WaitedFor time.Duration  `db:"waited_for"`
	LockDelay time.Duration  `db:"lock_delay"`
	Channel   *string        `db:"wake_channel"`
	Mode      *string        `db:"lock_mode"`
	Permits   *int32         `db:"permits"`
}

type eventState struct {
	ID            int64          `db:"event_id"`
	Kind          string         `db:"kind"`
	Owner         *string        `db:"owner_id"`
	Token         *int64         `db:"fence_token"`
	Actor         string         `db:"actor"`
	PreviousOwner *string        `db:"previous_owner"`
	PreviousToken *int64         `db:"previous_token"`
	Detail        map[string]any `db:"detail"`
}

const (
	readLockSQL = `
SELECT l.owner_id, l.fence_token, l.expires_at, l.ttl, l.acquired_at, l.renewed_at, l.renew_count,
       l.released_at, l.grant_kind, l.previous_owner, l.previous_token, l.metadata, l.wake_until,
       l.handed_to, l.lock_delay, l.delay_until, l.delay_until - c.ts AS delay_in, l.lock_mode, l.permits,
       l.kept_until, l.kept_until - c.ts AS kept_in,
       l.expires_at = distributed_lock_group_end() AS group_end,
       CASE WHEN l.expires_at = distributed_lock_group_end() THEN interval '0' ELSE l.expires_at - c.ts END AS expires_in,
       c.ts - l.acquired_at AS acquired_ago,
       c.ts - l.released_at AS released_ago, c.ts - l.renewed_at AS renewed_ago,
       l.wake_until - c.ts AS wake_in, c.ts AS read_at
FROM distributed_lock l, (SELECT clock_timestamp() AS ts) c
WHERE l.lock_key = $1 AND l.slot = 0`
	readWaitersSQL = `
SELECT w.waiter_id, w.owner_id, w.seen_until - c.ts AS seen_in, w.ttl, w.claim_window, w.metadata,
       w.log_grants, w.actor, c.ts - w.waiting_since AS waited_for, w.lock_delay, w.wake_channel,
       w.lock_mode, w.permits
FROM distributed_lock_waiter w, (SELECT clock_timestamp() AS ts) c
WHERE w.lock_key = $1 ORDER BY w.waiter_id`
	readEventsSQL = `
SELECT e.event_id, e.kind, e.owner_id, e.fence_token, e.actor, e.previous_owner, e.previous_token, e.detail
FROM distributed_lock_event e WHERE e.lock_key = $1 ORDER BY e.event_id`
	// The largest token the sequence has handed out.
	lastTokenSQL = `SELECT CASE WHEN is_called THEN last_value ELSE last_value - 1 END FROM distributed_lock_fence_seq`
)

// observed is everything of a key's a call may have changed.
type observed struct {
	row     *lockState // nil: no row
	waiters []waiterState
	events  []eventState
	slots   []slotState // the key's holder slots, in slot order
	// sessions are the case's prepared sessions (nil: deleted), read by
	// runCase, not observe.
	sessions []*sessionState
}

func observe(t *testing.T, db *pgxpool.Pool, key string) observed {
	t.Helper()
	ctx := context.Background()
	var o observed
	if !utf8.ValidString(key) {
		return o // the database holds no such key, nor can look one up
	}
	rows, _ := db.Query(ctx, readLockSQL, key)
	row, err := pgx.CollectExactlyOneRow(rows, pgx.RowToStructByName[lockState])
	switch {
	case errors.Is(err, pgx.ErrNoRows):
	case err != nil:
		t.Fatalf("read the row of %q: %v", key, err)
	default:
		o.row = &row
	}
	rows, _ = db.Query(ctx, readWaitersSQL, key)
	if o.waiters, err = pgx.CollectRows(rows, pgx.RowToStructByName[waiterState]); err != nil {
		t.Fatalf("read the waiters of %q: %v", key, err)
	}
	rows, _ = db.Query(ctx, readEventsSQL, key)
	if o.events, err = pgx.CollectRows(rows, pgx.RowToStructByName[eventState]); err != nil {
		t.Fatalf("read the events of %q: %v", key, err)
	}
	rows, _ = db.Query(ctx, readSlotsSQL, key)
	if o.slots, err = pgx.CollectRows(rows, pgx.RowToStructByName[slotState]); err != nil {
		t.Fatalf("read the holders of %q: %v", key, err)
	}
	return o
}

func lastToken(t *testing.T, db *pgxpool.Pool) int64 {
	t.Helper()
	var n int64
	if err := db.QueryRow(context.Background(), lastTokenSQL).Scan(&n); err != nil {
		t.Fatalf("read the token sequence: %v", err)
	}
	return n
}
