package protocol_test

import (
	"fmt"
	"reflect"
	"time"
)

// slotState is a holder slot as read after a call; the *In and *Ago fields
// are its times relative to the database's clock at the read.
type slotState struct {
	Slot        int32          `db:"slot"`
	Owner       string         `db:"owner_id"`
	Token       int64          `db:"fence_token"`
	GrantKind   string         `db:"grant_kind"`
	Metadata    map[string]any `db:"metadata"`
	TTL         time.Duration  `db:"ttl"`
	AcquiredAt  time.Time      `db:"acquired_at"`
	ExpiresAt   time.Time      `db:"expires_at"`
	RenewCount  int32          `db:"renew_count"`
	RenewedAt   *time.Time     `db:"renewed_at"`
	ReleasedAt  *time.Time     `db:"released_at"`
	HandedTo    *int64         `db:"handed_to"`
	ExpiresIn   time.Duration  `db:"expires_in"`
	ReleasedAgo *time.Duration `db:"released_ago"`
}

func (h slotState) String() string {
	return fmt.Sprintf("{slot %d, owner %s, token %d, kind %s, ttl %v, expires in %v, renewed ×%d, released %s, metadata %v}",
		h.Slot, h.Owner, h.Token, h.GrantKind, h.TTL, h.ExpiresIn, h.RenewCount, show(h.ReleasedAt), h.Metadata)
}

// stored is the slot without its clock-relative fields.
func (h slotState) stored() slotState {
	h.ExpiresIn, h.ReleasedAgo = 0, nil
	return h
}

const readSlotsSQL = `
SELECT h.slot, h.owner_id, h.fence_token, h.grant_kind, h.metadata, h.ttl, h.acquired_at, h.expires_at,
       h.renew_count, h.renewed_at, h.released_at, h.handed_to, h.expires_at - c.ts AS expires_in,
       c.ts - h.released_at AS released_ago
FROM distributed_lock h, (SELECT clock_timestamp() AS ts) c
WHERE h.lock_key = $1 AND h.slot > 0 ORDER BY h.slot`

// slotWant is one slot of the key after the call, in slot order. With kept
// the slot must be exactly as prepared; otherwise every field is checked.
type slotWant struct {
	kept bool

	slot       int32 // 0: its place in the want (from 1)
	owner      string
	token      tok
	expires    span
	keptExpiry bool // expires_at as prepared, instead of expires
	ttl        time.Duration
	released   released
	kind       string // grant_kind; "": acquired
	renewals   int32
	metadata   string // JSON; "": {}
	handedTo   string // the waiter (by owner) the slot was handed to; "": NULL
}

// asPrepared is a slot the call left alone.
var asPrepared = slotWant{kept: true}

// slotGranted is a new lease of owner's for ttl in a slot (a drawn token).
func slotGranted(owner, kind string, ttl time.Duration) slotWant {
	return slotWant{owner: owner, token: drawnToken, expires: about(ttl), ttl: ttl, kind: kind}
}

// slotRenewed is the n-th prepared holder's lease of owner's, renewed once
// for ttl from the call.
func slotRenewed(n int, owner string, ttl time.Duration) slotWant {
	return slotWant{owner: owner, token: slotTok(n), expires: about(ttl), ttl: ttl, renewals: 1}
}

// slotReleasedNow is the n-th prepared holder's lease of owner's, released
// by the call; slotExpiredNow one the call made run out now.
func slotReleasedNow(n int, owner string) slotWant {
	return slotWant{owner: owner, token: slotTok(n), keptExpiry: true, ttl: time.Minute, released: releasedNow}
}

func slotExpiredNow(n int, owner string) slotWant {
	return slotWant{owner: owner, token: slotTok(n), expires: justNow, ttl: time.Minute}
}

// slotExpiredAndEndedNow: force-expired now, and ended with its group
// (distributed_lock_settle releases the slots of a group it ends).
func slotExpiredAndEndedNow(n int, owner string) slotWant {
	w := slotExpiredNow(n, owner)
	w.released = releasedNow
	return w
}

// slots is n slots the call left alone.
func slotsKept(n int) []slotWant {
	var ws []slotWant
	for range n {
		ws = append(ws, asPrepared)
	}
	return ws
}

func (c checker) slots(got []slotState, want []slotWant) {
	c.t.Helper()
	before := map[int32]slotState{}
	for _, b := range c.slotsBefore {
		before[b.Slot] = b.stored()
	}
	if want == nil {
		if len(got) != len(c.slotsBefore) {
			c.t.Errorf("slots %v; want them as prepared, %v", got, c.slotsBefore)
			return
		}
		want = slotsKept(len(got))
	}
	if len(got) != len(want) {
		c.t.Errorf("%d slots %v; want %d", len(got), got, len(want))
		return
	}
	for i, w := range want {
		g := got[i]
		slot := w.slot
		if slot == 0 {
			slot = int32(i + 1)
		}
		if g.Slot != slot {
			c.t.Errorf("slot %d where slot %d is wanted: %v", g.Slot, slot, got)
			continue
		}
		b, prepared := before[slot]
		name := fmt.Sprintf("slot %d", slot)
		if w.kept {
			if !prepared || !reflect.DeepEqual(g.stored(), b) {
				c.t.Errorf("%s changed:\n got %v\nwant %v", name, g, b)
			}
			continue
		}
		if g.Owner != w.owner || g.GrantKind != orString(w.kind, "acquired") || g.RenewCount != w.renewals {
			c.t.Errorf("%s: owner %s, kind %s, renewals %d; want %s, %s, %d", name, g.Owner, g.GrantKind, g.RenewCount,
				w.owner, orString(w.kind, "acquired"), w.renewals)
		}
		token := g.Token
		c.token(name+" fence_token", &token, w.token)
		if w.keptExpiry {
			if !prepared || !g.ExpiresAt.Equal(b.ExpiresAt) {
				c.t.Errorf("%s expires_at %v; want it as prepared", name, g.ExpiresAt)
			}
		} else if !w.expires.holds(g.ExpiresIn) {
			c.t.Errorf("%s expires in %v; want within [%v, %v]", name, g.ExpiresIn, w.expires.lo, w.expires.hi)
		}
		if w.ttl != 0 && g.TTL != w.ttl {
			c.t.Errorf("%s ttl %v; want %v", name, g.TTL, w.ttl)
		}
		switch w.released {
		case notReleased:
			if g.ReleasedAt != nil {
				c.t.Errorf("%s released at %v; want not released", name, *g.ReleasedAt)
			}
		case stillReleased:
			if g.ReleasedAt == nil || !prepared || b.ReleasedAt == nil || !g.ReleasedAt.Equal(*b.ReleasedAt) {
				c.t.Errorf("%s released_at %s; want it as prepared", name, show(g.ReleasedAt))
			}
		case releasedNow:
			if g.ReleasedAgo == nil || !justNow.holds(-*g.ReleasedAgo) {
				c.t.Errorf("%s released %s ago; want released by the call", name, show(g.ReleasedAgo))
			}
		}
		var wantHanded *int64
		if w.handedTo != "" {
			id := c.p.waiter(w.handedTo)
			wantHanded = &id
		}
		// A record the call itself made (its id unknown here): any id.
		if wantHanded != nil && *wantHanded == 0 && g.HandedTo != nil {
			wantHanded = g.HandedTo
		}
		if show(g.HandedTo) != show(wantHanded) {
			c.t.Errorf("%s handed_to %s; want %s (%s)", name, show(g.HandedTo), show(wantHanded), orString(w.handedTo, "nobody"))
		}
		if !sameJSON(g.Metadata, orString(w.metadata, "{}")) {
			c.t.Errorf("%s metadata %v; want %s", name, g.Metadata, orString(w.metadata, "{}"))
		}
	}
}

// handedFromGroup is the row of a group that ended and was handed to
// waiter owner: an exclusive lease now, the group's permits (0: shared)
// kept for the key's next group.
func handedFromGroup(owner string, permits int) rowWant {
	w := handedTo(owner, "acquired", groupOwner)
	w.permits = permits
	return w
}
