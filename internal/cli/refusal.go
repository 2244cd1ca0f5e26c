package cli

import (
	"errors"
	"fmt"
	"time"

	"github.com/lockctl/lockctl/internal/lockdb"
	"github.com/lockctl/lockctl/internal/textsafe"
	"github.com/lockctl/lockctl/locker"
)

// refusalResult is acquire's --json object on exit 3: the result of the
// refusal (the key's row) and why the key could not be had. Error is held
// (another owner's running lease), queued (free or lapsed, but kept for the
// waiters queued for it) or delayed (in its lock-delay until delay_until).
// Position is the caller's own place in the queue when it waited (--wait)
// and gave up. Holders is an array because a shared lease may have
// several; it is empty when nobody holds the key.
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
// (a wait that ran out) and held's holder, queue and lock-delay.
func refusalOf(requestedOwner string, held *locker.HeldError, row *locker.LockInfo) refusalResult {
	r := refusalResult{result: heldResult(requestedOwner, held, row), Error: lockdb.OutcomeHeld,
		Holders: []holderJSON{}, QueueLength: held.QueueLength}
	switch {
	case held.DelayUntil != nil:
		r.Error = lockdb.OutcomeDelayed
		until := utc(*held.DelayUntil)
		r.DelayUntil = &until
	case held.Queued:
		r.Error = lockdb.OutcomeQueued
	}
	if held.Position > 0 {
		r.Position = &held.Position
	}
	r.Outcome = r.Error
	if held.Remaining > 0 && held.DelayUntil == nil {
		r.Holders = append(r.Holders, holderJSON{Owner: held.Owner, Token: held.Token,
			ExpiresAt: utc(held.ExpiresAt), RemainingMs: held.Remaining.Milliseconds()})
	}
	return r
}

// refusalLine is the text of a held refusal: who holds the key and for how
// long, or the lock-delay that keeps it, then the queue.
func refusalLine(prog string, held *locker.HeldError) string {
	key, owner := textsafe.Escape(held.Key), textsafe.Escape(held.Owner)
	var line string
	switch {
	case held.DelayUntil != nil:
		line = fmt.Sprintf("%s: %s is in its lock-delay until %s (%s more; last held by %s, token %d)",
			prog, key, utc(*held.DelayUntil).Format(time.RFC3339Nano), formatDuration(held.DelayLeft), owner, held.Token)
	case held.Queued && held.Remaining <= 0:
		line = fmt.Sprintf("%s: %s is promised to the waiters queued for it (last held by %s, token %d)", prog, key, owner, held.Token)
	default:
		line = fmt.Sprintf("%s: %s is held by %s (token %d) for another %s",
			prog, key, owner, held.Token, formatDuration(held.Remaining))
	}
	switch {
	case held.Position > 0:
		line += fmt.Sprintf("; queued %d of %d", held.Position, held.QueueLength)
	case held.QueueLength > 0:
		line += fmt.Sprintf("; %d queued", held.QueueLength)
	}
	return line
}

// waitedOutRefusal is the held refusal of a wait that ran out: the key's
// row read after it (row) and where the waiter stood (err's *GaveUpError).
func waitedOutRefusal(err error, row locker.LockInfo) *locker.HeldError {
	h := &locker.HeldError{Key: row.Key, Owner: row.Owner, Token: row.Token,
		ExpiresAt: row.ExpiresAt, Remaining: row.Remaining, DelayUntil: row.DelayUntil}
	switch row.State() {
	case locker.StateDelayed:
		h.Remaining, h.DelayLeft = 0, row.DelayUntil.Sub(row.DBNow)
	case locker.StateFree, locker.StateExpired:
		h.Remaining, h.Queued = 0, true // kept for the waiters ahead
	}
	var gaveUp *locker.GaveUpError
	if errors.As(err, &gaveUp) {
		h.Position, h.QueueLength = gaveUp.Position, gaveUp.QueueLength
	}
	return h
}
