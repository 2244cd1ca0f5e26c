package protocol_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// holderRow is one holder's slot of a key a case prepares (a row of
// distributed_lock at slot 1 and up): a lease of its own on a shared or
// semaphore key (11_shared.sql). Durations
// are offsets from the database's clock when the slot is written.
type holderRow struct {
	slot      int // 0: its place among the state's holders (from 1)
	owner     string
	expiresIn time.Duration // ≤ 0: the lease has run out
	ttl       time.Duration // 0: a minute
	freedAgo  time.Duration // > 0: released that long ago
	renewals  int
	kind      string // grant_kind; "": acquired
	role      string // owner_role; "": the caller's
}

// groupOwner owns a group's row: nobody (11_shared.sql).
const groupOwner = "*"

// sharedBy is a key taken shared, its group running, with a live lease for
// each owner; semaphoreOf one taken as n permits. A running group's row
// expires at distributed_lock_group_end() (state_test.go's insert).
func sharedBy(owners ...string) state {
	return state{row: &lockRow{owner: groupOwner, mode: "shared"}}.holding(liveSlots(owners...)...)
}

func semaphoreOf(n int, owners ...string) state {
	return state{row: &lockRow{owner: groupOwner, mode: "semaphore", permits: n}}.holding(liveSlots(owners...)...)
}

// groupEnded is a shared key (permits 0) or a semaphore of permits whose
// group ended a second ago, its row released as distributed_lock_settle
// leaves it (expiring when it was released).
func groupEnded(permits int) state {
	r := &lockRow{owner: groupOwner, mode: "shared", expiresIn: -time.Second, freedAgo: time.Second}
	if permits > 0 {
		r.mode, r.permits = "semaphore", permits
	}
	return state{row: r}
}

// liveSlot is a lease of owner's with 50 s left; lapsedSlot one that ran
// out a second ago, unreleased; releasedSlot one released a second ago.
func liveSlot(owner string) holderRow { return holderRow{owner: owner, expiresIn: 50 * time.Second} }

func lapsedSlot(owner string) holderRow { return holderRow{owner: owner, expiresIn: -time.Second} }

func releasedSlot(owner string) holderRow {
	return holderRow{owner: owner, expiresIn: 30 * time.Second, freedAgo: time.Second}
}

func liveSlots(owners ...string) []holderRow {
	var hs []holderRow
	for _, o := range owners {
		hs = append(hs, liveSlot(o))
	}
	return hs
}

// holding adds slots after the state's own.
func (s state) holding(hs ...holderRow) state {
	s.holders = append(slices.Clone(s.holders), hs...)
	return s
}

// Every column of a slot a case prepares, as insertLockSQL names a row's.
const insertHolderSQL = `
INSERT INTO distributed_lock (lock_key, slot, lock_mode, owner_id, fence_token, grant_kind, ttl,
    acquired_at, expires_at, renew_count, renewed_at, released_at, owner_role)
SELECT $1::text, $2, coalesce((SELECT k.lock_mode FROM distributed_lock k WHERE k.lock_key = $1::text AND k.slot = 0), 'shared'),
       $3, nextval('distributed_lock_fence_seq'), $4, $5 * interval '1 microsecond',
       c.now + ($6 - $5) * interval '1 microsecond', c.now + $6 * interval '1 microsecond', $7::int,
       CASE WHEN $7::int > 0 THEN c.now - interval '1 second' END,
       CASE WHEN $8::bigint > 0 THEN c.now - $8 * interval '1 microsecond' END,
       coalesce(nullif($9, ''), session_user)
FROM (SELECT clock_timestamp() AS now) c
RETURNING fence_token`

// prepareHolders writes key's slots, after its row (a slot's token is
// drawn after its group's), and returns their tokens in order.
func prepareHolders(t *testing.T, db *pgxpool.Pool, key string, hs []holderRow) []int64 {
	t.Helper()
	var tokens []int64
	for i, h := range hs {
		slot := h.slot
		if slot == 0 {
			slot = i + 1
		}
		var token int64
		err := db.QueryRow(context.Background(), insertHolderSQL, key, slot, h.owner, orString(h.kind, "acquired"),
			or(h.ttl, time.Minute).Microseconds(), h.expiresIn.Microseconds(), h.renewals, h.freedAgo.Microseconds(),
			h.role,
		).Scan(&token)
		if err != nil {
			t.Fatalf("prepare slot %d of %q: %v", slot, key, err)
		}
		tokens = append(tokens, token)
	}
	return tokens
}
