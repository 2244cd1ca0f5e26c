package locker

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/lockctl/lockctl/internal/lockdb"
	"github.com/lockctl/lockctl/store"
)

// ErrSessionLost: a session lapsed (no heartbeat reached the database
// within its TTL), or was closed or ended by an operator. Its leases ended
// with it.
var ErrSessionLost = errors.New("session lost")

// Session keeps any number of leases alive with one heartbeat statement per
// interval, the way etcd's leases and Consul's sessions do: a process opens
// one, binds the leases it holds to it (Session.Keepalive), and its
// heartbeat moves the session's expiry and every bound lease's to the same
// instant. When the process dies or loses the database for the session's
// TTL, all of its leases lapse together, each as an expiry: a lock-delay
// follows where set, and the next grant of each key is a steal with a new
// token. A bound lease stays an ordinary lease: its ExpiresAt is the
// session's, and Renew, Release, Fence, ls and the console read it as any.
//
// The session's TTL is the Locker's Config.TTL; it heartbeats every
// Config.RenewEvery (default a third of the TTL) and, like Keepalive, treats
// a session it could not prove within its trust window (TTL minus
// Config.SafetyMargin from the last heartbeat sent) as lost: Context is
// then cancelled with ErrSessionLost, and so is every bound Keepalive's.
type Session struct {
	l   *Locker
	db  DBTX
	ref store.SessionRef

	ctx    context.Context
	cancel context.CancelCauseFunc
	done   chan struct{}

	mu     sync.Mutex
	row    store.SessionRow
	sentAt time.Time // this process's clock before the last heartbeat (or the open) was sent
	kept   map[store.BoundRef]*Keepalive
	drop   []store.BoundRef // stopped keepalives: dropped at the next heartbeat
}

// OpenSession opens a session for owner on db, which must outlive it (a
// pool, not a transaction), and starts its heartbeat. The session records
// this host's name and process id (lockctl sessions). Close it when done.
func (l *Locker) OpenSession(ctx context.Context, db DBTX, owner string) (*Session, error) {
	if err := ValidateOwner(owner); err != nil {
		return nil, fmt.Errorf("locker: open session: %w", err)
	}
	host, _ := os.Hostname()
	sentAt := l.clock.Now()
	row, err := store.OpenSession(ctx, db, store.SessionParams{
		Owner: owner, TTL: l.cfg.TTL, Host: host, PID: os.Getpid(), Metadata: l.metadata,
	})
	if err != nil {
		return nil, fmt.Errorf("locker: open session: %w", err)
	}
	sctx, cancel := context.WithCancelCause(context.Background())
	s := &Session{
		l: l, db: db, ref: store.SessionRef{ID: row.ID, Owner: owner},
		ctx: sctx, cancel: cancel, done: make(chan struct{}),
		row: row, sentAt: sentAt, kept: map[store.BoundRef]*Keepalive{},
	}
	go s.run()
	return s, nil
}

// ID is the session's id (distributed_lock_session.session_id).
func (s *Session) ID() int64 { return s.ref.ID }

// Owner is the owner the session was opened for.
func (s *Session) Owner() string { return s.ref.Owner }

// ExpiresAt is when the session ends unless a heartbeat extends it, on the
// database's clock.
func (s *Session) ExpiresAt() time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.row.ExpiresAt
}

// Context is cancelled when the session is lost (cause: an error matching
// ErrSessionLost) or closed.
func (s *Session) Context() context.Context { return s.ctx }

// Err is nil while the session runs, and why it ended after.
func (s *Session) Err() error {
	if s.ctx.Err() == nil {
		return nil
	}
	return context.Cause(s.ctx)
}

// errSessionClosed is the cause after Close.
var errSessionClosed = fmt.Errorf("locker: %w: closed", ErrSessionLost)

// Close stops the heartbeat, releases every lease the session still keeps
// (a clean release each: no lock-delay, waiters served, in key order,
// logged as Release logs with Config.LogGrants; not those whose Keepalive
// was stopped) and deletes the session, in one statement. Every bound
// Keepalive's Context is cancelled.
func (s *Session) Close(ctx context.Context) error {
	s.cancel(errSessionClosed)
	<-s.done
	s.loseAll(errSessionClosed)
	s.mu.Lock()
	drop := s.drop
	s.mu.Unlock()
	if len(drop) > 0 {
		// Leases whose Keepalive was stopped are the caller's to release,
		// not Close's: unbind them first.
		if _, err := store.SessionHeartbeat(ctx, s.db, s.ref, drop); err != nil {
			return fmt.Errorf("locker: close session %d: %w", s.ref.ID, err)
		}
	}
	if _, _, err := store.CloseSession(ctx, s.db, s.ref, s.l.cfg.LogGrants, s.l.ownerActor(s.ref.Owner)); err != nil {
		return fmt.Errorf("locker: close session %d: %w", s.ref.ID, err)
	}
	return nil
}

// Keepalive binds lease to the session (one statement, before it returns)
// and keeps it with the session's heartbeat instead of renewals of its
// own. Its Context
// is cancelled with a *LeaseLostError when the lease ends (released,
// forced, taken), when the binding is refused (the lease was no longer
// held) or not made while the lease and the session were both still
// trusted, or when the session is lost (then it wraps ErrSessionLost). The
// lease's ExpiresAt becomes the session's (which may shorten it). Stop
// unbinds it at the next heartbeat; then Release it (or release first).
func (s *Session) Keepalive(ctx context.Context, lease Lease) *Keepalive {
	return s.KeepaliveAll(ctx, []Lease{lease})
}

// KeepaliveAll is Keepalive for a set of leases of one owner: one statement
// binds them all, all or none, and Context ends when any of them is lost.
func (s *Session) KeepaliveAll(ctx context.Context, leases []Lease) *Keepalive {
	k := s.l.newKeepalive(ctx, slices.Clone(leases))
	k.session = s
	if err := validLeases(leases); err != nil {
		k.lose(&LeaseLostError{Key: quoteKeys(leaseKeys(leases)), Reason: err.Error(), Err: err})
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
	s.mu.Lock()
	sentAt := s.sentAt
	s.mu.Unlock()
	key := set[0].Key // a LeaseLostError names one key, as a Keepalive's does
	// Until the binding is made nothing keeps the leases but their grants:
	// trust them no longer than a Keepalive of their own would, nor than
	// the session, whose expiry the binding gives them (it may be the
	// earlier: a binding that commits while its reply is held up ends the
	// leases with the session, or with a heartbeat after it). Give the
	// binding up when either ends.
	window := bindWindow(s.l, earliest(set))
	if window <= 0 {
		k.lose(&LeaseLostError{Key: key, Reason: fmt.Sprintf("%s could not be bound to session %d before its expiry: its trust window had already passed", quoteKeys(leaseKeys(set)), s.ref.ID)})
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
		// Stop meanwhile): have the next heartbeat drop it.
		s.mu.Lock()
		for _, lease := range set {
			s.drop = append(s.drop, store.BoundRef{Key: lease.Key, Token: lease.Token})
		}
		s.mu.Unlock()
		k.lose(&LeaseLostError{Key: key, Reason: fmt.Sprintf("binding to session %d failed: %v", s.ref.ID, err), Err: err})
		return
	case bound.Outcome == lockdb.OutcomeNotHeld:
		nh := &NotHeldError{Key: bound.NotHeld}
		k.lose(&LeaseLostError{Key: bound.NotHeld, Reason: nh.Error(), Err: nh})
		return
	case bound.Outcome != lockdb.OutcomeBound:
		s.lose(sessionLost(s.ref.ID, bound.Outcome))
		k.lose(leaseLostWithSession(key, s.Err()))
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	row := bound.Session
	if s.sentAt.After(sentAt) {
		// A heartbeat was acknowledged meanwhile. The two serialize on the
		// session's row: either it saw the binding and moved the leases
		// too, or the binding read the expiry it set. Either way the leases
		// run to its expiry at least, so time them from it, as the session.
		row, sentAt = s.row, s.sentAt
	}
	if err := s.ctx.Err(); err != nil {
		k.lose(leaseLostWithSession(key, context.Cause(s.ctx)))
		return
	}
	k.setLeases(row, sentAt)
	for _, lease := range set {
		ref := store.BoundRef{Key: lease.Key, Token: lease.Token}
		if k.ctx.Err() != nil {
			s.drop = append(s.drop, ref) // stopped while binding
			continue
		}
		s.kept[ref] = k
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
	leases := k.Leases()
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, lease := range leases {
		ref := store.BoundRef{Key: lease.Key, Token: lease.Token}
		if s.kept[ref] == k {
			delete(s.kept, ref)
			s.drop = append(s.drop, ref)
		}
	}
}

// run heartbeats until the session is closed or lost.
func (s *Session) run() {
	defer close(s.done)
	ttl := s.row.TTL
	every, margin := s.l.renewEvery(ttl), s.l.safetyMargin(ttl)
	trustUntil := s.sentAt.Add(ttl - margin)
	next := s.sentAt.Add(every)
	var lastErr error
	for {
		now := s.l.clock.Now()
		timer, stop := s.l.clock.Timer(min(next.Sub(now), trustUntil.Sub(now)))
		select {
		case <-s.ctx.Done():
			stop()
			return
		case <-timer:
		}
		now = s.l.clock.Now()
		if !now.Before(trustUntil) {
			why := "its trust window had already passed"
			if lastErr != nil {
				why = lastErr.Error()
			}
			s.lose(fmt.Errorf("locker: %w: session %d could not heartbeat before its expiry: %s", ErrSessionLost, s.ref.ID, why))
			return
		}
		rctx, cancel := context.WithTimeout(s.ctx, trustUntil.Sub(now))
		sentAt, err := s.heartbeat(rctx)
		cancel()
		switch {
		case err == nil:
			trustUntil, next, lastErr = sentAt.Add(ttl-margin), sentAt.Add(every), nil
		case errors.Is(err, ErrSessionLost):
			s.lose(err)
			return
		default:
			lastErr = err
			next = s.l.clock.Now().Add(min(every/4, time.Second))
		}
	}
}

// heartbeat sends one heartbeat and applies its answer to the bound
// keepalives. It returns when it was sent.
func (s *Session) heartbeat(ctx context.Context) (time.Time, error) {
	s.mu.Lock()
	drop := s.drop
	s.drop = nil
	s.mu.Unlock()
	sentAt := s.l.clock.Now()
	beat, err := store.SessionHeartbeat(ctx, s.db, s.ref, drop)
	if err != nil {
		s.mu.Lock()
		s.drop = append(drop, s.drop...) // try them again with the next one
		s.mu.Unlock()
		return sentAt, fmt.Errorf("locker: session %d heartbeat: %w", s.ref.ID, err)
	}
	if beat.Outcome != lockdb.OutcomeRenewed {
		return sentAt, sessionLost(s.ref.ID, beat.Outcome)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.row, s.sentAt = beat.Session, sentAt
	lost := map[*Keepalive][]string{}
	for _, ref := range beat.Lost {
		if k := s.kept[ref]; k != nil {
			lost[k] = append(lost[k], ref.Key)
			delete(s.kept, ref)
		}
	}
	seen := map[*Keepalive]bool{}
	for _, k := range s.kept {
		if !seen[k] && lost[k] == nil {
			seen[k] = true
			k.setLeases(beat.Session, sentAt)
		}
	}
	for k, keys := range lost {
		s.forgetLocked(k)
		k.lose(&LeaseLostError{Key: keys[0],
			Reason: fmt.Sprintf("%s ended while bound to session %d (released, expired, taken or forced)", quoteKeys(keys), s.ref.ID)})
	}
	return sentAt, nil
}

// forgetLocked drops every binding of k (one of a set was lost: the set is).
func (s *Session) forgetLocked(k *Keepalive) {
	for ref, kk := range s.kept {
		if kk == k {
			delete(s.kept, ref)
			s.drop = append(s.drop, ref)
		}
	}
}

// lose ends the session with cause and every bound keepalive with it.
func (s *Session) lose(cause error) {
	s.cancel(cause)
	s.loseAll(context.Cause(s.ctx))
}

func (s *Session) loseAll(cause error) {
	s.mu.Lock()
	kept := s.kept
	s.kept = map[store.BoundRef]*Keepalive{}
	s.mu.Unlock()
	for _, k := range kept {
		// A set's bindings all lead to its one Keepalive: the first cancel
		// counts, so name the set's first key, whatever the map's order.
		k.lose(leaseLostWithSession(k.Leases()[0].Key, cause))
	}
}

func sessionLost(id int64, outcome string) error {
	if outcome == lockdb.OutcomeExpired {
		return fmt.Errorf("locker: %w: session %d lapsed", ErrSessionLost, id)
	}
	return fmt.Errorf("locker: %w: session %d is gone (closed or ended by an operator)", ErrSessionLost, id)
}

func leaseLostWithSession(key string, cause error) *LeaseLostError {
	return &LeaseLostError{Key: key, Reason: cause.Error(), Err: cause}
}

// ErrNoSession: EndSession found no such session (closed, ended, or pruned
// after it lapsed).
var ErrNoSession = errors.New("no such session")

// EndSession is the operator's end of session id (lockctl end-session):
// every lease still bound to it is force-expired (an event each, naming
// Config.Actor and reason; its lock-delay starts), the session is deleted
// and a session_ended event records it. Its process learns at its next
// heartbeat that the session is lost, and every bound Keepalive's Context
// ends. It returns how many leases it expired.
func (l *Locker) EndSession(ctx context.Context, db DBTX, id int64, reason string) (int, error) {
	if err := ValidateReason(reason); err != nil {
		return 0, fmt.Errorf("locker: end session %d: %w", id, err)
	}
	outcome, expired, err := store.EndSession(ctx, db, id, l.operatorActor(), reason)
	if err != nil {
		return 0, fmt.Errorf("locker: end session %d: %w", id, err)
	}
	if outcome != lockdb.OutcomeEnded {
		return 0, fmt.Errorf("locker: end session %d: %w", id, ErrNoSession)
	}
	return expired, nil
}
