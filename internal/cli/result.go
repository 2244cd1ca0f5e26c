package cli

import (
	"errors"
	"fmt"
	"time"

	"github.com/lockctl/lockctl/internal/lockdb"
	"github.com/lockctl/lockctl/internal/operator"
	"github.com/lockctl/lockctl/internal/textsafe"
	"github.com/lockctl/lockctl/locker"
)

// Outcomes of acquire, renew, release and expire, as printed in JSON, are
// locker's Outcome values, and the refusals lockdb.OutcomeHeld and
// lockdb.OutcomeNotHeld.

// result is one --json object. Key, owner, token and expires_at describe
// the lock after the operation; for held and not_held they are the current
// holder's (or last holder's) and requested_* say what the caller named.
type result struct {
	Key         string     `json:"key"`
	Owner       string     `json:"owner"`
	Token       int64      `json:"token"`
	ExpiresAt   *time.Time `json:"expires_at"` // null only when the key has no row
	TTLMs       int64      `json:"ttl_ms"`
	Outcome     string     `json:"outcome"`
	State       string     `json:"state"` // held, expiring, expired, free; "none": no row
	RemainingMs *int64     `json:"remaining_ms,omitempty"`
	Actor       string     `json:"actor,omitempty"` // operator actions
	// DelayUntil: a force action started the lease's lock-delay, which
	// ends then.
	DelayUntil *time.Time `json:"delay_until,omitempty"`
	// Mode and Permits: the key is held shared or as a semaphore (of
	// Permits) by holders, each with a lease of its own; unset for a key
	// held alone.
	Mode    string `json:"mode,omitempty"`
	Permits int    `json:"permits,omitempty"`
	// HoldersEnded: how many holders' leases a force action on the
	// group's token ended.
	HoldersEnded int `json:"holders_ended,omitempty"`

	RequestedOwner string `json:"requested_owner,omitempty"`
	RequestedToken int64  `json:"requested_token,omitempty"`
	Detail         string `json:"detail,omitempty"`
}

// leaseResult describes a successful operation.
func leaseResult(l locker.Lease) result {
	exp := utc(l.ExpiresAt)
	r := result{Key: l.Key, Owner: l.Owner, Token: l.Token, ExpiresAt: &exp,
		TTLMs: l.TTL.Milliseconds(), Outcome: string(l.Outcome), State: string(lockdb.StateHeld)}
	if l.Mode == locker.ModeShared || l.Mode == locker.ModeSemaphore {
		r.Mode, r.Permits = l.Mode, l.Permits
	}
	switch l.Outcome {
	case locker.Released, operator.ForceReleased:
		r.State = string(lockdb.StateFree)
	case operator.Expired:
		r.State = string(lockdb.StateExpired)
	}
	return r
}

// rowResult describes a refusal with the key's current row (nil: no row).
func rowResult(outcome, key string, row *lockdb.LockInfo) result {
	r := result{Key: key, Outcome: outcome, State: "none"}
	if row == nil {
		return r
	}
	exp := utc(row.ExpiresAt)
	remaining := row.Remaining.Milliseconds()
	r.Owner, r.Token, r.ExpiresAt = row.Owner, row.Token, &exp
	r.TTLMs, r.State, r.RemainingMs = row.TTL.Milliseconds(), string(row.State()), &remaining
	return r
}

// heldResult turns a held *locker.Error into a held result, with the holder's row
// when it was read (for its TTL and whether it is expiring).
func heldResult(requestedOwner string, held *locker.Error, row *lockdb.LockInfo) result {
	if row != nil && row.Token == held.Token {
		r := rowResult(lockdb.OutcomeHeld, held.Key, row)
		r.RequestedOwner = requestedOwner
		return r
	}
	exp := utc(held.ExpiresAt)
	remaining := held.Remaining.Milliseconds()
	return result{Key: held.Key, Owner: held.Owner, Token: held.Token, ExpiresAt: &exp,
		Outcome: lockdb.OutcomeHeld, State: string(lockdb.StateHeld), RemainingMs: &remaining,
		RequestedOwner: requestedOwner}
}

// printLease reports a successful operation: JSON on Stdout, or one line.
func printLease(env Env, asJSON bool, l locker.Lease, actor string) int {
	return printLeaseDelayed(env, asJSON, l, actor, nil)
}

// printLeaseDelayed is printLease for a force action, which says when the
// lock-delay it started ends (delayUntil; nil: it started none).
func printLeaseDelayed(env Env, asJSON bool, l locker.Lease, actor string, delayUntil *time.Time) int {
	if asJSON {
		r := leaseResult(l)
		r.Actor, r.DelayUntil = actor, utcPtr(delayUntil)
		return env.emit(r)
	}
	key, owner := textsafe.Escape(l.Key), textsafe.Escape(l.Owner)
	var line string
	switch l.Outcome {
	case locker.Acquired, locker.Stolen, locker.Renewed:
		line = fmt.Sprintf("%s %s token=%d owner=%s expires in %s", l.Outcome, key, l.Token, owner, formatDuration(l.TTL))
		switch {
		case l.Mode == locker.ModeShared:
			line += " (shared)"
		case l.Mode == locker.ModeSemaphore:
			line += fmt.Sprintf(" (one of %s)", plural(l.Permits, "permit", "permits"))
		}
		if l.Outcome == locker.Stolen {
			line += " (taken over from an expired lease)"
		}
	case operator.Expired:
		line = fmt.Sprintf("expired %s token=%d owner=%s (by %s; the next acquirer takes it over)",
			key, l.Token, owner, textsafe.Escape(actor))
	case operator.ForceReleased:
		line = fmt.Sprintf("force-released %s token=%d owner=%s (by %s; the next acquirer gets a new token)",
			key, l.Token, owner, textsafe.Escape(actor))
	default:
		line = fmt.Sprintf("%s %s token=%d owner=%s", l.Outcome, key, l.Token, owner)
	}
	if delayUntil != nil {
		line += fmt.Sprintf("; in its lock-delay until %s: nobody gets it before then (end-delay ends it)",
			utc(*delayUntil).Format(time.RFC3339Nano))
	}
	fmt.Fprintln(env.Stdout, line)
	return ExitOK
}

// printRefusal reports err when it is a held, conflict or not-held
// refusal or a deadlock and returns its exit code; ok is false for any
// other error. In text mode the
// explanation goes to Stderr; with --json the result goes to Stdout.
// now is the key as read after a held or conflict refusal (zero: not read).
func printRefusal(env Env, asJSON bool, requestedOwner string, err error, now keyState) (code int, ok bool) {
	var e *locker.Error
	if !errors.As(err, &e) {
		return 0, false
	}
	// A wait that ended first (e.Err: ctx's) is no refusal of its own.
	held, conflict, notHeld, dead := e, e, e, e
	switch {
	case e.Kind == locker.ErrHeld && e.Conflict:
		if asJSON {
			return env.emitCode(conflictOf(requestedOwner, conflict, now), ExitHeld), true
		}
		env.printLine(env.Prog + ": " + textsafe.Escape(conflictText(conflict)))
		return ExitHeld, true
	case e.Kind == locker.ErrDeadlock:
		if asJSON {
			return env.emitCode(deadlockOf(dead), ExitDeadlock), true
		}
		env.printLine(deadlockLine(env.Prog, dead))
		return ExitDeadlock, true
	case e.Kind == locker.ErrHeld && e.Err == nil:
		if asJSON {
			return env.emitCode(refusalOf(requestedOwner, held, now), ExitHeld), true
		}
		env.printLine(refusalLine(env.Prog, held, now))
		return ExitHeld, true
	case e.Kind == locker.ErrNotHeld:
		why := notHeldReason(notHeld)
		if asJSON {
			r := rowResult(lockdb.OutcomeNotHeld, notHeld.Key, notHeld.Current)
			r.RequestedOwner, r.RequestedToken, r.Detail = notHeld.Owner, notHeld.Token, why
			return env.emitCode(r, ExitNotHeld), true
		}
		env.printLine(fmt.Sprintf("%s: not held: token %d of %s is not the current lease: %s",
			env.Prog, notHeld.Token, textsafe.Escape(notHeld.Key), why))
		return ExitNotHeld, true
	}
	return 0, false
}

// notHeldReason says why a named lease is not current, escaped for a terminal.
func notHeldReason(e *locker.Error) string {
	c := e.Current
	switch {
	case c == nil:
		return "the key has no lock row"
	case c.Mode != "" && c.Mode != locker.ModeExclusive && c.Token != e.Token:
		// The row is a group's: the token named none of its holders' leases.
		if c.ReleasedAt == nil {
			return fmt.Sprintf("it is none of the running leases of the key's holders (it is held %s)", heldAs(c.Mode, int(c.Permits)))
		}
		return "it is not a running lease: the key's holders have all ended"
	case c.Token != e.Token:
		return fmt.Sprintf("now token %d of %s (%s)", c.Token, textsafe.Escape(c.Owner), c.State())
	case c.ReleasedAt != nil:
		return "it was released"
	case c.Remaining <= 0:
		return "it expired"
	case e.Owner != "" && c.Owner != e.Owner:
		return fmt.Sprintf("it belongs to %s", textsafe.Escape(c.Owner))
	default:
		return "it changed"
	}
}

// emit writes v as JSON to Stdout and returns ExitOK.
func (e Env) emit(v any) int { return e.emitCode(v, ExitOK) }

// emitCode writes v as JSON to Stdout and returns code, or ExitError if
// writing failed.
func (e Env) emitCode(v any, code int) int {
	if err := writeJSON(e.Stdout, v); err != nil {
		return e.Errorf("write output: %v", err)
	}
	return code
}
