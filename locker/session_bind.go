package locker

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/lockctl/lockctl/internal/lockdb"
	"github.com/lockctl/lockctl/store"
)

// Keepalive binds leases (of one owner; all or none) to the session in one
// statement, and keeps them with its heartbeat. Its Context ends with an
// *Error when a lease ends or the binding is refused, or when the session
// is lost (wrapping ErrSessionLost). Bound leases expire with the session:
// read their ValidFor from the Keepalive's Leases. Stop unbinds them at
// the next heartbeat; then Release them.
func (s *Session) Keepalive(ctx context.Context, leases ...Lease) *Keepalive {
	k := s.l.newKeepalive(ctx, slices.Clone(leases))
	k.session = s
	if err := validLeases(leases); err != nil {
		k.lose(&Error{Kind: ErrLeaseLost, Key: quoteKeys(leaseKeys(leases)), Reason: err.Error(), Err: err})
		close(k.done)
		return k
	}
	k.bind(s)
	return k
}

// bind binds k's leases to s and registers k with it; a refusal cancels k.
func (k *Keepalive) bind(s *Session) {
	defer close(k.done)
	set := k.Leases()
	refs := make([]store.LeaseRef, len(set))
	for i, lease := range set {
		refs[i] = lease.ref()
		s.l.claims.settle(lease.ref()) // the binding is the claim of a handed-off lease
	}
	// The word the session stands on before the binding: what any binding
	// reads is this heartbeat's expiry or a later one.
	s.mu.Lock()
	row, sentAt := s.row, s.sentAt
	s.mu.Unlock()
	key := set[0].Key // an Error names one key, as a Keepalive's does
	if s.ctx.Err() != nil {
		// Nothing is sent: the leases keep their grants' word.
		k.lose(leaseLostWithSession(key, context.Cause(s.ctx)))
		return
	}
	// Until the binding is made nothing keeps the leases but their grants:
	// trust them no longer than a Keepalive of their own would. Give the
	// binding up then, or when the session ends.
	window := bindWindow(s.l, earliest(set))
	if window <= 0 {
		k.lose(&Error{Kind: ErrLeaseLost, Key: key, Reason: fmt.Sprintf("%s could not be bound to session %d before its expiry: its trust window had already passed", quoteKeys(leaseKeys(set)), s.ref.ID)})
		return
	}
	bctx, cancel := context.WithTimeout(k.ctx, window)
	stop := context.AfterFunc(s.ctx, cancel)
	bound, err := store.BindSession(bctx, s.db, s.ref, refs)
	stop()
	cancel()
	switch {
	case err != nil:
		// The binding may have committed all the same (a reply lost, or
		// Stop meanwhile), which gave the leases the session's expiry,
		// perhaps an earlier one than their grants': trust each no longer
		// than the session's word before the binding either, and have the
		// next heartbeat drop it.
		k.capLeases(row, sentAt)
		s.mu.Lock()
		s.dropLocked(boundRefs(set))
		s.mu.Unlock()
		if s.ctx.Err() != nil {
			k.lose(leaseLostWithSession(key, context.Cause(s.ctx))) // lost while it was out
			return
		}
		k.lose(&Error{Kind: ErrLeaseLost, Key: key, Reason: fmt.Sprintf("binding to session %d failed: %v", s.ref.ID, err), Err: err})
		return
	case bound.Outcome == lockdb.OutcomeNotHeld:
		nh := &Error{Kind: ErrNotHeld, Key: bound.NotHeld}
		k.lose(&Error{Kind: ErrLeaseLost, Key: bound.NotHeld, Reason: nh.Error(), Err: nh})
		return
	case bound.Outcome != lockdb.OutcomeBound:
		s.lose(sessionLost(s.ref.ID, bound.Outcome))
		k.lose(leaseLostWithSession(key, s.Err()))
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	// The leases now end when the session did as the binding read it. Each
	// heartbeat's expiry is its database now plus the TTL, after it was
	// sent, so the leases are timed from the latest acknowledged heartbeat
	// whose expiry was no later: the last one if the binding read its
	// expiry or a later one, else the one before the binding. (A heartbeat
	// answered meanwhile may have run before the binding and not have kept
	// these leases, or even dropped a binding of theirs it was asked to
	// drop: only a heartbeat that names them vouches for them.)
	if !s.row.ExpiresAt.After(bound.Session.ExpiresAt) {
		sentAt = s.sentAt
	}
	k.setLeases(bound.Session, sentAt)
	if err := s.ctx.Err(); err != nil {
		k.lose(leaseLostWithSession(key, context.Cause(s.ctx)))
		return
	}
	if k.ctx.Err() != nil {
		s.dropLocked(boundRefs(set)) // stopped while binding
		return
	}
	s.keepLocked(k, boundRefs(set))
	if sentAt.Before(s.sentAt) {
		s.watchLocked(k)
	}
}

// keepLocked registers k as the keeper of refs, which were just bound: a
// drop of them still to be sent is called off (the binding is new), and a
// Keepalive that kept one of them before (the lease bound twice) is ended,
// its other leases dropped.
func (s *Session) keepLocked(k *Keepalive, refs []store.BoundRef) {
	s.drop = slices.DeleteFunc(s.drop, func(r store.BoundRef) bool { return slices.Contains(refs, r) })
	var displaced []*Keepalive
	for _, ref := range refs {
		if old := s.kept[ref]; old != nil && old != k && !slices.Contains(displaced, old) {
			displaced = append(displaced, old)
		}
		s.kept[ref] = k
	}
	for _, old := range displaced {
		s.forgetLocked(old)
		lost := old.Leases()
		old.lose(&Error{Kind: ErrLeaseLost, Key: lost[0].Key,
			Reason: fmt.Sprintf("%s was bound to session %d again, by another Keepalive", quoteKeys(leaseKeys(lost)), s.ref.ID)})
	}
}

// dropLocked has the next heartbeat drop the bindings of refs, except those
// a Keepalive keeps: a binding is one row per lease, and theirs is in use.
func (s *Session) dropLocked(refs []store.BoundRef) {
	for _, ref := range refs {
		if s.kept[ref] == nil && !slices.Contains(s.drop, ref) {
			s.drop = append(s.drop, ref)
		}
	}
}

// watchLocked ends k at its own trust end unless a heartbeat that names its
// leases keeps them first: they stand on an older heartbeat's word than the
// session does (the binding raced a heartbeat, or was answered while one
// was out), so the session's trust window does not cover them.
func (s *Session) watchLocked(k *Keepalive) {
	lease := k.Leases()[0]
	until := lease.sentAt.Add(lease.TTL - s.l.safetyMargin(lease.TTL))
	if s.behind[k].Equal(until) {
		return
	}
	s.behind[k] = until
	timer, stopTimer := s.l.clock.Timer(until.Sub(s.l.clock.Now()))
	go func() {
		defer stopTimer()
		due := false
		select {
		case <-timer:
			due = true
		case <-k.ctx.Done():
		}
		s.mu.Lock()
		mine := s.behind[k].Equal(until)
		if mine {
			delete(s.behind, k)
			if due {
				s.forgetLocked(k)
			}
		}
		s.mu.Unlock()
		if mine && due {
			k.lose(&Error{Kind: ErrLeaseLost, Key: lease.Key,
				Reason: fmt.Sprintf("%s could not be proven kept by session %d before its expiry: no heartbeat named it in time", quoteKeys(leaseKeys(k.Leases())), s.ref.ID)})
		}
	}()
}

// capLeases lowers the trust in k's leases to the session's word of row,
// sent at sentAt, where that ends earlier than their own.
func (k *Keepalive) capLeases(row store.SessionRow, sentAt time.Time) {
	k.mu.Lock()
	defer k.mu.Unlock()
	left := row.TTL - time.Since(sentAt)
	for i := range k.leases {
		lease := &k.leases[i]
		if left < lease.ValidFor() {
			lease.ExpiresAt, lease.TTL, lease.sentAt, lease.valid, lease.claim = row.ExpiresAt, row.TTL, sentAt, 0, nil
		}
	}
}

// bindWindow is how much longer lease is trusted before it is bound to a
// session: as Keepalive.run trusts it, to a safety margin short of the end
// of its grant (of its claim window, handed off and not yet claimed; from
// now, when nothing says when it was granted).
func bindWindow(l *Locker, lease Lease) time.Duration {
	ttl := lease.TTL
	if ttl == 0 {
		ttl = l.cfg.TTL
	}
	margin := l.safetyMargin(ttl)
	if lease.sentAt.IsZero() {
		return ttl - margin
	}
	length := lease.length()
	if lease.valid > 0 {
		margin = min(margin, length/2)
	}
	return lease.sentAt.Add(length - margin).Sub(l.clock.Now())
}

// unbind is Stop of a session's Keepalive: the session no longer keeps its
// leases after its next heartbeat.
func (s *Session) unbind(k *Keepalive) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.forgetLocked(k)
}

// boundRefs names leases as bindings do: key and token.
func boundRefs(leases []Lease) []store.BoundRef {
	refs := make([]store.BoundRef, len(leases))
	for i, lease := range leases {
		refs[i] = store.BoundRef{Key: lease.Key, Token: lease.Token}
	}
	return refs
}
