package locker

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/lockctl/lockctl/internal/lockdb"
	"github.com/lockctl/lockctl/store"
)

// ErrSessionLost: a session lapsed, or was closed or ended by an operator,
// and its leases with it.
var ErrSessionLost = errors.New("session lost")

// Session keeps any number of leases with one heartbeat statement per
// interval, as etcd's leases and Consul's sessions do: the heartbeat moves
// the session's expiry and every bound lease's to the same instant, so when
// the process dies or loses the database for the session's TTL (Config.TTL)
// its leases lapse together, each as an expiry. A bound lease stays an
// ordinary lease, trusted only on the word of the last statement that named
// it (its binding, or a heartbeat); a session not proven within its trust
// window is lost (ErrSessionLost), and so is every bound Keepalive.
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
	// behind are the kept keepalives whose leases stand on an older
	// heartbeat's word than the session's, with their own trust end
	// (watchLocked).
	behind map[*Keepalive]time.Time
}

// OpenSession opens a session for owner on db (a pool: it must outlive
// the session) and starts its heartbeat. Close it when done.
func (l *Locker) OpenSession(ctx context.Context, db DBTX, owner string) (*Session, error) {
	if err := lockdb.ValidateOwner(owner); err != nil {
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
		row: row, sentAt: sentAt, kept: map[store.BoundRef]*Keepalive{}, behind: map[*Keepalive]time.Time{},
	}
	go s.run()
	return s, nil
}

// ID is the session's id (distributed_lock_session.session_id).
func (s *Session) ID() int64 { return s.ref.ID }

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
// and deletes it, in one statement.
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
		if _, err := store.SessionHeartbeat(ctx, s.db, s.ref, drop, nil); err != nil {
			return fmt.Errorf("locker: close session %d: %w", s.ref.ID, err)
		}
	}
	if _, _, err := store.CloseSession(ctx, s.db, s.ref, s.l.cfg.LogGrants, s.l.ownerActor(s.ref.Owner)); err != nil {
		return fmt.Errorf("locker: close session %d: %w", s.ref.ID, err)
	}
	return nil
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
		// A heartbeat still out when the window ends loses the session then,
		// not when the call comes back, as Keepalive.run does.
		rctx, cancel := context.WithTimeout(s.ctx, trustUntil.Sub(now))
		stopLosing := context.AfterFunc(rctx, func() {
			if errors.Is(rctx.Err(), context.DeadlineExceeded) {
				s.lose(fmt.Errorf("locker: %w: session %d could not heartbeat before its expiry: the heartbeat was still out when its trust window ended", ErrSessionLost, s.ref.ID))
			}
		})
		sentAt, err := s.heartbeat(rctx)
		stopped := stopLosing()
		cancel()
		if !stopped {
			return // lost (or closed) while the heartbeat was out
		}
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

// heartbeat sends one heartbeat, naming every lease the session keeps, and
// applies its answer to their keepalives. It returns when it was sent.
func (s *Session) heartbeat(ctx context.Context) (time.Time, error) {
	s.mu.Lock()
	drop := s.drop
	s.drop = nil
	keep := make([]store.BoundRef, 0, len(s.kept))
	keepers := make([]*Keepalive, 0, len(s.kept))
	for ref, k := range s.kept {
		keep, keepers = append(keep, ref), append(keepers, k)
	}
	s.mu.Unlock()
	sentAt := s.l.clock.Now()
	beat, err := store.SessionHeartbeat(ctx, s.db, s.ref, drop, keep)
	if err != nil {
		s.mu.Lock()
		s.dropLocked(drop) // try them again with the next one
		s.mu.Unlock()
		return sentAt, fmt.Errorf("locker: session %d heartbeat: %w", s.ref.ID, err)
	}
	if beat.Outcome != lockdb.OutcomeRenewed {
		return sentAt, sessionLost(s.ref.ID, beat.Outcome)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.row, s.sentAt = beat.Session, sentAt
	notKept := make(map[store.BoundRef]bool, len(beat.Lost))
	for _, ref := range beat.Lost {
		notKept[ref] = true
	}
	// The answer is about the leases it named, for the keepalives that kept
	// them when it was sent: one stopped or bound anew meanwhile is not
	// answered for.
	named := map[*Keepalive]int{}
	lost := map[*Keepalive][]string{}
	for i, ref := range keep {
		k := keepers[i]
		switch {
		case s.kept[ref] != k:
		case notKept[ref]:
			lost[k] = append(lost[k], ref.Key)
		default:
			named[k]++
		}
	}
	proven := 0
	for k, n := range named {
		if lost[k] == nil && n == len(k.leases) {
			k.setLeases(beat.Session, sentAt)
			k.revokeBound(beat.Revokes)
			delete(s.behind, k)
			proven += n
		} else {
			delete(named, k)
		}
	}
	for k, keys := range lost {
		s.forgetLocked(k)
		k.lose(&Error{Kind: ErrLeaseLost, Key: keys[0],
			Reason: fmt.Sprintf("%s ended while bound to session %d (released, expired, taken or forced), or the session no longer kept it", quoteKeys(keys), s.ref.ID)})
	}
	if proven < len(s.kept) {
		// The rest were bound while it was out: they stand on their
		// binding's word, older than the session's now.
		for _, k := range s.kept {
			if _, ok := named[k]; !ok {
				s.watchLocked(k)
			}
		}
	}
	return sentAt, nil
}

// forgetLocked drops every binding of k (one of a set was lost, or k was
// stopped: the set is).
func (s *Session) forgetLocked(k *Keepalive) {
	var refs []store.BoundRef
	for ref, kk := range s.kept {
		if kk == k {
			delete(s.kept, ref)
			refs = append(refs, ref)
		}
	}
	s.dropLocked(refs)
	delete(s.behind, k)
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
	clear(s.behind)
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

func leaseLostWithSession(key string, cause error) *Error {
	return &Error{Kind: ErrLeaseLost, Key: key, Reason: cause.Error(), Err: cause}
}
