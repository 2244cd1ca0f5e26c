package cli

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/lockctl/lockctl/internal/lockdb"
	"github.com/lockctl/lockctl/internal/textsafe"
	"github.com/lockctl/lockctl/locker"
)

// refusalResult is acquire's --json object on exit 3: the result of the
// refusal (the key's row) and why the key could not be had. Error is held
// (another owner's running lease, or every permit taken), queued (free or
// lapsed, or held by holders, but kept for the waiters queued for it),
// delayed (in its lock-delay until delay_until), kept (released before
// its hold's at-least point, delay_until; lockdb.StateKept) or conflict (its holders
// hold it in another mode, or as a semaphore of other permits). Position
// is the caller's own place in the queue when it waited (--wait) and gave
// up. Holders is an array because a shared or semaphore key has several;
// it is empty when nobody holds the key.
type refusalResult struct {
	result
	Error       string       `json:"error"`
	Holders     []holderJSON `json:"holders"`
	QueueLength int          `json:"queue_length"`
	Position    *int         `json:"position,omitempty"`
	DelayUntil  *time.Time   `json:"delay_until,omitempty"`
}

// holderJSON is one holder of a refused key.
type holderJSON struct {
	Owner       string    `json:"owner"`
	Token       int64     `json:"token"`
	ExpiresAt   time.Time `json:"expires_at"`
	RemainingMs int64     `json:"remaining_ms"`
}

// refusalOf says why held refused the caller: err's place in the queue
// (a wait that ran out) and held's holder (the key's holders, when its
// group holds it), queue and lock-delay.
func refusalOf(requestedOwner string, held *locker.Error, now keyState) refusalResult {
	r := refusalResult{result: heldResult(requestedOwner, held, now.row), Error: lockdb.OutcomeHeld,
		Holders: []holderJSON{}, QueueLength: held.QueueLength}
	switch {
	case held.DelayUntil != nil:
		r.Error = lockdb.OutcomeDelayed
		if kept(now.row) {
			r.Error = string(lockdb.StateKept)
		}
		until := utc(*held.DelayUntil)
		r.DelayUntil = &until
	case held.Queued:
		r.Error = lockdb.OutcomeQueued
	}
	if held.Position > 0 {
		r.Position = &held.Position
	}
	r.Outcome = r.Error
	if g := now.group; g != nil {
		r.Mode, r.Permits, r.Holders = g.mode, g.permits, holdersJSON(g.holders)
		for _, h := range g.holders {
			if h.Token == r.Token { // the permit that ends first, which the refusal names
				r.TTLMs = h.TTL.Milliseconds()
			}
		}
		return r
	}
	if held.Remaining > 0 && held.DelayUntil == nil {
		r.Holders = append(r.Holders, holderJSON{Owner: held.Owner, Token: held.Token,
			ExpiresAt: utc(held.ExpiresAt), RemainingMs: held.Remaining.Milliseconds()})
	}
	return r
}

// refusalLine is the text of a held refusal: who holds the key and for how
// long (its holders, when g, its group, holds it), or the lock-delay that
// keeps it, then the queue.
func refusalLine(prog string, held *locker.Error, now keyState) string {
	if now.group != nil {
		return groupRefusalLine(prog, held, now.group)
	}
	key, owner := textsafe.Escape(held.Key), textsafe.Escape(held.Owner)
	var line string
	switch {
	case held.DelayUntil != nil && kept(now.row):
		line = fmt.Sprintf("%s: %s is kept until %s, its last hold's at-least point (%s more; released by %s, token %d)",
			prog, key, utc(*held.DelayUntil).Format(time.RFC3339Nano), formatDuration(held.DelayLeft), owner, held.Token)
	case held.DelayUntil != nil:
		line = fmt.Sprintf("%s: %s is in its lock-delay until %s (%s more; last held by %s, token %d)",
			prog, key, utc(*held.DelayUntil).Format(time.RFC3339Nano), formatDuration(held.DelayLeft), owner, held.Token)
	case held.Queued && held.Remaining <= 0:
		line = fmt.Sprintf("%s: %s is promised to the waiters queued for it (last held by %s, token %d)", prog, key, owner, held.Token)
	default:
		line = fmt.Sprintf("%s: %s is held by %s (token %d) for another %s",
			prog, key, owner, held.Token, formatDuration(held.Remaining))
	}
	return line + queueText(held)
}

// kept: row, the key's as read after a refusal, is kept until its hold's
// at-least point.
func kept(row *lockdb.LockInfo) bool {
	return row != nil && row.State() == lockdb.StateKept
}

// queueText ends a refusal's line with the queue: where the caller stood
// in it, or how many wait.
func queueText(held *locker.Error) string {
	switch {
	case held.Position > 0:
		return fmt.Sprintf("; queued %d of %d", held.Position, held.QueueLength)
	case held.QueueLength > 0:
		return fmt.Sprintf("; %d queued", held.QueueLength)
	}
	return ""
}

// conflictOf is the --json object of a conflict: the key's row, its
// holders, and what was asked (detail: the error's message).
func conflictOf(requestedOwner string, c *locker.Error, now keyState) refusalResult {
	r := refusalResult{result: rowResult(lockdb.OutcomeConflict, c.Key, now.row), Error: lockdb.OutcomeConflict,
		Holders: []holderJSON{}}
	r.Mode, r.Permits = c.Mode, c.Permits
	r.RequestedOwner, r.Detail = requestedOwner, conflictText(c)
	if now.group != nil {
		r.Holders = holdersJSON(now.group.holders)
	}
	return r
}

// conflictText is a conflict's message without the package's prefix: how
// the key is held, and how it was asked for.
func conflictText(c *locker.Error) string {
	return strings.TrimPrefix(c.Error(), "locker: ")
}

// waitedOutRefusal is the held refusal of a wait that ran out: the key's
// row read after it (row) and where the waiter stood (err's *locker.Error).
func waitedOutRefusal(err error, row lockdb.LockInfo) *locker.Error {
	h := &locker.Error{Kind: locker.ErrHeld, Key: row.Key, Owner: row.Owner, Token: row.Token,
		ExpiresAt: row.ExpiresAt, Remaining: row.Remaining, DelayUntil: row.DelayUntil}
	switch row.State() {
	case lockdb.StateDelayed, lockdb.StateKept:
		h.Remaining, h.DelayLeft = 0, row.DelayUntil.Sub(row.DBNow)
	case lockdb.StateFree, lockdb.StateExpired:
		h.Remaining, h.Queued = 0, true // kept for the waiters ahead
	}
	var gaveUp *locker.Error
	if errors.As(err, &gaveUp) {
		h.Position, h.QueueLength = gaveUp.Position, gaveUp.QueueLength
	}
	return h
}
