package tui

import (
	"errors"
	"fmt"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"

	"github.com/lockctl/lockctl/internal/lockdb"
	"github.com/lockctl/lockctl/internal/lockview"
	"github.com/lockctl/lockctl/internal/operator"
	"github.com/lockctl/lockctl/locker"
)

// replicaRefusal is what an action on a standby is told.
const replicaRefusal = "replica — read-only: this server is a standby and refuses writes; connect to the primary to act on locks"

// startAction opens the form or the confirmation for an action key, or
// says why the action does not apply.
func (m Model) startAction(msg tea.KeyPressMsg) (Model, tea.Cmd) {
	k := m.keys
	if m.hasSnap && m.snap.Page.InRecovery {
		m.flash = flash{replicaRefusal, flashError}
		return m, nil
	}
	row, ok := m.selection()
	if key.Matches(msg, k.Acquire) {
		// Off the home page the operator looks at one lock on purpose:
		// the form proposes its key.
		suggest := ""
		if s, is := m.pages[m.active].(lockSelector); is && m.active != pageLocks {
			if row, ok := s.selectedLock(); ok {
				suggest = row.Key
			}
		}
		m.form = newAcquireForm(m.styles, m.opts.Owner, m.opts.TTL, suggest, m.width)
		return m, m.form.inputs[0].Focus()
	}
	if !ok {
		m.flash = flash{"no lock selected", flashError}
		return m, nil
	}
	state := live(row, m.advance()).state
	if key.Matches(msg, k.EndDelay) {
		if !inDelay(state) {
			m.flash = flash{fmt.Sprintf("%s is not in a lock-delay (%s): nothing to end", safe(row.Key), state), flashError}
			return m, nil
		}
		m.confirm = &confirmModel{kind: actEndDelay, key: row.Key, owner: row.Owner, token: row.Token,
			kept: state == lockdb.StateKept}
		return m, nil
	}
	if state == lockdb.StateFree {
		m.flash = flash{fmt.Sprintf("%s is free (released by %s): nothing to act on", safe(row.Key), safe(row.Owner)), flashError}
		return m, nil
	}
	if h, ok := m.selectedHolder(); ok {
		return m.startHolderAction(msg, row, h)
	}
	group := m.groupOf(row)
	switch {
	case key.Matches(msg, k.Renew) && group != "":
		m.flash = flash{fmt.Sprintf("%s has no lease of its own to renew (%s): select one of its holders on its detail page, and renew that",
			safe(row.Key), group), flashError}
	case key.Matches(msg, k.Renew):
		m.flash = flash{fmt.Sprintf("renewing %s (token %s)…", safe(row.Key), token(row.Token)), flashInfo}
		return m, m.send(actionRequest{kind: actRenew, key: row.Key, owner: row.Owner, token: row.Token, ttl: row.TTL})
	case key.Matches(msg, k.Revoke) && group != "":
		m.flash = flash{fmt.Sprintf("%s is held by a group (%s): only a lease held alone can be revoked", safe(row.Key), group), flashError}
	case key.Matches(msg, k.Revoke):
		m.confirm = &confirmModel{kind: actRevoke, key: row.Key, owner: row.Owner, token: row.Token}
	case key.Matches(msg, k.Expire):
		m.confirm = &confirmModel{kind: actExpire, key: row.Key, owner: row.Owner, token: row.Token, group: group}
	case key.Matches(msg, k.Release):
		m.confirm = &confirmModel{kind: actRelease, key: row.Key, owner: row.Owner, token: row.Token, group: group}
	}
	return m, nil
}

// groupOf says who holds row when it is a running group's ("shared · 3
// holders"), by the holders its page knows; "" for any other row.
func (m Model) groupOf(row lockview.ListedLock) string {
	if !runningGroup(row.Lock) {
		return ""
	}
	hs, known := m.selectedHolders()
	return groupOwner(row.LockInfo, liveHolders(hs, m.advance()), known)[0]
}

// startHolderAction renews, force-expires or force-releases one holder of
// a shared or semaphore key: its lease, by its owner and token, as the
// actions on an exclusive lease take that lease.
func (m Model) startHolderAction(msg tea.KeyPressMsg, row lockview.ListedLock, h lockview.Holder) (Model, tea.Cmd) {
	k := m.keys
	switch {
	case key.Matches(msg, k.Renew):
		m.flash = flash{fmt.Sprintf("renewing holder %s of %s (token %s)…", safe(h.Owner), safe(row.Key), token(h.Token)), flashInfo}
		return m, m.send(actionRequest{kind: actRenew, key: row.Key, owner: h.Owner, token: h.Token, ttl: h.TTL, slot: h.Slot})
	case key.Matches(msg, k.Revoke):
		m.flash = flash{fmt.Sprintf("holder %s of %s shares the key: only a lease held alone can be revoked", safe(h.Owner), safe(row.Key)), flashError}
	case key.Matches(msg, k.Expire):
		m.confirm = &confirmModel{kind: actExpire, key: row.Key, owner: h.Owner, token: h.Token, slot: h.Slot}
	case key.Matches(msg, k.Release):
		m.confirm = &confirmModel{kind: actRelease, key: row.Key, owner: h.Owner, token: h.Token, slot: h.Slot}
	}
	return m, nil
}

// startEndSession asks before ending the session p selects: a live one;
// a lapsed session's leases lapsed with it, and prune deletes it.
func (m Model) startEndSession(p sessionSelector) (Model, tea.Cmd) {
	if m.hasSnap && m.snap.Page.InRecovery {
		m.flash = flash{replicaRefusal, flashError}
		return m, nil
	}
	s, ok := p.selectedSession()
	switch {
	case !ok:
		m.flash = flash{"no session selected", flashError}
	case s.StateAfter(m.advance()) == lockview.SessionLapsed:
		m.flash = flash{fmt.Sprintf("session %d has lapsed: its leases lapsed with it, nothing to end (prune deletes it)", s.ID), flashError}
	default:
		m.confirm = &confirmModel{kind: actEndSession, session: &s}
	}
	return m, nil
}

// send numbers an action and runs it.
func (m *Model) send(req actionRequest) tea.Cmd {
	m.actionSeq++
	req.seq = m.actionSeq
	return runAction(m.ctx, m.opts.Pool, m.opts.Locker, m.opts.Operator, m.opts.ActionDone, req)
}

// actionDone shows an action's result and refreshes the table. A result
// older than the newest action sent does not overwrite that one's message.
func (m Model) actionDone(msg actionDoneMsg) (Model, tea.Cmd) {
	if msg.seq == m.actionSeq {
		m.flash = actionResult(msg)
	}
	return m, m.requestPoll()
}

// nowHolder says who has a lock now: "now held by X (token N)".
func nowHolder(l lockdb.LockInfo) string {
	if grouped(l) {
		return nowHolders(l)
	}
	owner := safe(l.Owner)
	switch l.State() {
	case lockdb.StateExpired:
		return fmt.Sprintf("now expired, last held by %s (token %s)", owner, token(l.Token))
	case lockdb.StateFree:
		return fmt.Sprintf("now free, released by %s (token %s)", owner, token(l.Token))
	case lockdb.StateDelayed:
		return fmt.Sprintf("now in its lock-delay, last held by %s (token %s)", owner, token(l.Token))
	case lockdb.StateKept:
		return fmt.Sprintf("now kept until its at-least point, released by %s (token %s)", owner, token(l.Token))
	default:
		return fmt.Sprintf("now held by %s (token %s)", owner, token(l.Token))
	}
}

// nowHolders is nowHolder for a shared or semaphore key's row, whose
// owner is its holders' group.
func nowHolders(l lockdb.LockInfo) string {
	mode := "shared"
	if l.Mode == locker.ModeSemaphore {
		mode = fmt.Sprintf("as a semaphore of %d permits", l.Permits)
	}
	switch l.State() {
	case lockdb.StateExpired:
		return fmt.Sprintf("now held %s by holders whose leases all ran out (group token %s)", mode, token(l.Token))
	case lockdb.StateFree:
		return fmt.Sprintf("now free, last held %s (group token %s)", mode, token(l.Token))
	default:
		return fmt.Sprintf("now held %s by its holders (group token %s)", mode, token(l.Token))
	}
}

// queued is "; N queued" for a queue of n, "" for none.
func queued(n int) string {
	if n == 0 {
		return ""
	}
	return fmt.Sprintf("; %d queued", n)
}

func actionResult(msg actionDoneMsg) flash {
	key := safe(msg.key)
	var notHeld *locker.Error
	var held *locker.Error
	switch {
	case errors.As(msg.err, &notHeld) && notHeld.Kind == locker.ErrNotHeld:
		// What the operator must know comes first (who has the lock now),
		// the key last: a narrow line loses the part they already know.
		c := notHeld.Current
		var text string
		switch {
		case msg.slot > 0:
			text = fmt.Sprintf("✗ %s refused: holder token %s has no lease of the key now (released, ran out or forced meanwhile) — %s",
				msg.kind, token(msg.token), key)
		case c == nil:
			text = fmt.Sprintf("✗ %s refused: the key has no lock row now — %s", msg.kind, key)
		case c.Token != msg.token:
			text = fmt.Sprintf("✗ %s refused: %s — %s changed since you saw token %s",
				msg.kind, nowHolder(*c), key, token(msg.token))
		default:
			text = fmt.Sprintf("✗ %s refused: token %s is %s now — %s", msg.kind, token(msg.token), c.State(), key)
		}
		return flash{text, flashError}
	case errors.As(msg.err, &held) && held.Kind == locker.ErrHeld && held.DelayUntil != nil:
		return flash{fmt.Sprintf("✗ not acquired: in its lock-delay for %s more, last held by %s (token %s)%s — %s",
			shortDur(held.DelayLeft), safe(held.Owner), token(held.Token), queued(held.QueueLength), key), flashError}
	case errors.As(msg.err, &held) && held.Kind == locker.ErrHeld && held.Owner == lockdb.GroupOwner:
		return flash{fmt.Sprintf("✗ not acquired: held by the holders of a shared or semaphore key (group token %s) for another %s%s — %s",
			token(held.Token), shortDur(held.Remaining), queued(held.QueueLength), key), flashError}
	case errors.As(msg.err, &held) && held.Kind == locker.ErrHeld:
		return flash{fmt.Sprintf("✗ not acquired: held by %s (token %s) for another %s%s — %s",
			safe(held.Owner), token(held.Token), shortDur(held.Remaining), queued(held.QueueLength), key), flashError}
	case errors.Is(msg.err, operator.ErrNotDelayed):
		return flash{fmt.Sprintf("✗ end-delay refused: the lock-delay is over already — %s", key), flashError}
	case errors.Is(msg.err, operator.ErrNoSession):
		return flash{fmt.Sprintf("✗ end-session refused: %s is gone already (closed by its process, ended, or pruned)", key), flashError}
	case errors.Is(msg.err, locker.ErrReadOnly):
		return flash{"✗ " + string(msg.kind) + " refused: " + replicaRefusal, flashError}
	case msg.err != nil:
		return flash{fmt.Sprintf("✗ %s %s failed, nothing changed: %s", msg.kind, key, errMeaning(msg.err)), flashError}
	}
	l := msg.lease
	if msg.slot > 0 || l.Owner == lockdb.GroupOwner {
		return groupResult(msg)
	}
	switch msg.kind {
	case actAcquire:
		return flash{fmt.Sprintf("✓ %s %s for %s: token %s, TTL %s", l.Outcome, key, safe(l.Owner), token(l.Token), shortDur(l.TTL)), flashOK}
	case actRenew:
		return flash{fmt.Sprintf("✓ renewed %s (token %s) for another %s", key, token(l.Token), shortDur(l.TTL)), flashOK}
	case actExpire:
		return flash{fmt.Sprintf("✓ force-expired %s (token %s of %s): the next acquirer takes it over", key, token(l.Token), safe(l.Owner)), flashOK}
	case actRevoke:
		return flash{fmt.Sprintf("✓ revoked %s (token %s of %s): its holder learns it at its next renewal, and keeps the lease until it releases it",
			key, token(l.Token), safe(l.Owner)), flashOK}
	case actEndSession:
		return flash{fmt.Sprintf("✓ ended %s: %s force-expired; its process loses them at its next heartbeat",
			key, plural(int64(msg.expired), "lease", "leases")), flashOK}
	case actEndDelay:
		return flash{fmt.Sprintf("✓ ended the lock-delay of %s (last held by %s): its queue's head, or the next acquirer, gets it",
			key, safe(msg.ended.Owner)), flashOK}
	default:
		return flash{fmt.Sprintf("✓ force-released %s (token %s of %s): it is free", key, token(l.Token), safe(l.Owner)), flashOK}
	}
}

// groupResult is actionResult's message for an action on one holder of a
// shared or semaphore key, or on all of them.
func groupResult(msg actionDoneMsg) flash {
	key, l := safe(msg.key), msg.lease
	holder := fmt.Sprintf("holder %s of %s (token %s, slot %d)", safe(l.Owner), key, token(l.Token), msg.slot)
	switch {
	case msg.kind == actRenew:
		return flash{fmt.Sprintf("✓ renewed %s for another %s", holder, shortDur(l.TTL)), flashOK}
	case msg.slot > 0 && msg.kind == actExpire:
		return flash{fmt.Sprintf("✓ force-expired %s: the key's other holders keep theirs", holder), flashOK}
	case msg.slot > 0:
		return flash{fmt.Sprintf("✓ force-released %s: the key's other holders keep theirs", holder), flashOK}
	case msg.kind == actExpire:
		return flash{fmt.Sprintf("✓ force-expired every holder of %s (group token %s): the next acquirer takes it", key, token(l.Token)), flashOK}
	default:
		return flash{fmt.Sprintf("✓ force-released every holder of %s (group token %s): it is free", key, token(l.Token)), flashOK}
	}
}
