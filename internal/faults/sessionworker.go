package faults

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/lockctl/lockctl/internal/history"
	"github.com/lockctl/lockctl/locker"
)

// sessionWorker is a worker whose processes keep all their leases with one
// locker.Session, as lockctl run does: each process opens a session, takes
// two to four keys (one alone, the rest as a set, or each alone), binds
// them to the session (Session.Keepalive), binding
// again what a failed binding could not, and makes fenced writes under them
// for up to a few TTLs, restarting a keepalive now and then (stopped, its
// leases bound again at once); then it closes the session, which releases
// what is still bound, unless the injector killed it first (KillSession).
// A killed process sends nothing more: its session and leases lapse
// together at the session's last expiry, which history's property 8
// checks. Then the worker starts its next process, under a new owner.
type sessionWorker struct {
	*worker
	sess *pgxpool.Pool // the sessions' heartbeats, bindings and closes

	mu   sync.Mutex
	proc *process // the process holding keys now, which the injector may kill
}

// process is one run of a session worker, from its session's open to its
// close or its kill.
type process struct {
	owner   string
	session *locker.Session
	kill    context.CancelFunc // ends dead: the kill
	dead    context.Context
	kept    atomic.Int32 // keepalives bound and not ended
	closing bool         // under sessionWorker.mu: past the point a kill is meant for
	holds   []hold       // every Keepalive it made, used by the worker's goroutine only
}

// hold is one Keepalive of a process, with what its ValidFor promised.
type hold struct {
	ka      *locker.Keepalive
	promise *promise
}

func (w *sessionWorker) run(ctx context.Context) {
	for gen := 1; ctx.Err() == nil; gen++ {
		w.runProcess(ctx, fmt.Sprintf("s%d.%d", w.id, gen))
	}
}

func (w *sessionWorker) runProcess(runCtx context.Context, owner string) {
	// The kill is independent of the run's end, so a process that was not
	// killed can still close its session after the run.
	dead, kill := context.WithCancel(context.WithoutCancel(runCtx))
	defer kill()
	ctx, cancel := context.WithCancel(runCtx)
	defer cancel()
	stop := context.AfterFunc(dead, cancel)
	defer stop()
	db := &procDB{db: w.sess, dead: dead}
	s, err := w.lk.OpenSession(ctx, db, owner)
	if err != nil {
		w.classify("open_session", err)
		sleepCtx(runCtx, time.Duration(5+w.rng.IntN(25))*time.Millisecond)
		return
	}
	w.counts.Observe("session_opened")
	p := &process{owner: owner, session: s, kill: kill, dead: dead}
	for _, keys := range w.plan() {
		if leases, ok := w.takeKeys(ctx, keys, owner); ok {
			w.keep(ctx, p, leases)
		}
	}
	w.takeModeKey(ctx, p)
	// Killable once it has taken what it could, so a kill finds the
	// session keeping all of it.
	w.mu.Lock()
	w.proc = p
	w.mu.Unlock()
	for rounds := 2 + w.rng.IntN(12); rounds > 0 && ctx.Err() == nil && s.Err() == nil; rounds-- {
		live := slices.DeleteFunc(slices.Clone(p.holds), func(h hold) bool { return h.ka.Context().Err() != nil })
		if len(live) == 0 {
			break
		}
		h := live[w.rng.IntN(len(live))]
		if w.rng.IntN(8) == 0 {
			// The holder restarts its keepalive: stops it and binds the
			// same leases again at once.
			h.ka.Stop()
			w.counts.Observe("session_keepalive_restarted")
			w.keep(ctx, p, h.ka.Leases())
			continue
		}
		leases := h.ka.Leases()
		i := w.rng.IntN(len(leases))
		if h.promise.vouch(h.ka) {
			w.fencedWrite(h.ka.Context(), leases[i])
		}
		sleepCtx(ctx, time.Duration(w.rng.IntN(int(w.ttl/3/time.Millisecond)+1))*time.Millisecond)
	}
	w.mu.Lock()
	w.proc = nil
	p.closing = true
	w.mu.Unlock()
	// A killed process keeps its promises whole; a live one lets its
	// leases go with the close it sends now.
	for _, h := range p.holds {
		h.promise.record(dead.Err() == nil)
	}
	if dead.Err() != nil {
		return // killed: nothing more of it reaches the database
	}
	if errors.Is(s.Err(), locker.ErrSessionLost) {
		w.counts.Observe("session_lost")
	}
	cctx, ccancel := context.WithTimeout(context.WithoutCancel(runCtx), 2*w.ttl)
	defer ccancel()
	if err := s.Close(cctx); err != nil {
		w.classify("close_session", err)
		return
	}
	w.counts.Observe("session_closed")
}

// plan picks the keys of one process, distinct: the first hot half the
// time (taken alone), then one to three cold ones, as one set or each
// alone.
func (w *sessionWorker) plan() [][]string {
	cold := slices.Clone(w.keys[w.hot:])
	w.rng.Shuffle(len(cold), func(i, j int) { cold[i], cold[j] = cold[j], cold[i] })
	first := cold[0]
	cold = cold[1:]
	if w.rng.IntN(2) == 0 {
		first = w.keys[w.rng.IntN(w.hot)]
	}
	rest := cold[:min(len(cold), 1+w.rng.IntN(3))]
	if len(rest) > 1 && w.rng.IntN(2) == 0 {
		return [][]string{{first}, rest}
	}
	plan := [][]string{{first}}
	for _, k := range rest {
		plan = append(plan, []string{k})
	}
	return plan
}

// keep binds leases to p's session (Session.Keepalive) and records the
// Keepalive. A binding that failed with an error (its reply lost to a
// restart or a killed backend: it may have committed) is made again while
// the leases are still trusted, as a caller retrying it would, twice at
// most.
func (w *sessionWorker) keep(ctx context.Context, p *process, leases []locker.Lease) {
	onArrival := validFor(leases)
	for try := 0; ; try++ {
		ka := p.session.Keepalive(ctx, leases...)
		w.recordEnd(ka, leases, onArrival, p)
		p.holds = append(p.holds, hold{ka: ka, promise: w.newPromise(leases, true)})
		if try == 2 || !bindFailed(context.Cause(ka.Context())) || slices.Min(validFor(leases)) <= w.margin || ctx.Err() != nil {
			return
		}
		w.counts.Observe("session_bind_retried")
	}
}

// bindFailed: a Keepalive ended at once because its binding's statement
// failed, not because the database refused it or the session was lost.
func bindFailed(err error) bool {
	var lost *locker.Error
	return errors.As(err, &lost) && lost.Err != nil &&
		!errors.Is(err, locker.ErrNotHeld) && !errors.Is(err, locker.ErrSessionLost)
}

// takeKeys takes keys for owner: one alone, or several as a set (named by
// owner: a process makes at most one set call), at once or waiting.
func (w *sessionWorker) takeKeys(ctx context.Context, keys []string, owner string) ([]locker.Lease, bool) {
	wait := w.rng.IntN(2) == 0
	if len(keys) > 1 {
		leases, err := w.grantSet(ctx, w.setKeys(keys), owner, owner, wait)
		if err != nil {
			w.classify("acquire_set", err)
			return nil, false
		}
		w.counts.Observe("set_granted")
		return leases, true
	}
	lease, err := w.grant(ctx, keys[0], owner, wait)
	if err != nil {
		w.classify("acquire", err)
		return nil, false
	}
	w.counts.Observe("grant_" + string(lease.Outcome))
	return []locker.Lease{lease}, true
}

// recordEnd records, per lease, when the process stopped trusting leases
// kept by ka (each with onArrival left when its grant returned): lost (the
// session told it), or ended by its own close or its kill, which are not
// losses.
func (w *sessionWorker) recordEnd(ka *locker.Keepalive, leases []locker.Lease, onArrival []time.Duration, p *process) {
	endedAtStart := ka.Context().Err() != nil
	p.kept.Add(1)
	w.ends.Add(1)
	context.AfterFunc(ka.Context(), func() {
		defer w.ends.Done()
		p.kept.Add(-1)
		now := time.Now()
		last := ka.Leases()
		cause := context.Cause(ka.Context())
		at := lostAt(cause, now)
		w.mu.Lock()
		closing := p.closing
		w.mu.Unlock()
		lost := errors.Is(cause, locker.ErrLeaseLost) && !closing && p.dead.Err() == nil
		if lost {
			w.counts.Observe("session_lease_lost")
		}
		for i, lease := range leases {
			w.rec.EndLease(history.LeaseEnd{Client: w.id, Key: lease.Key, Owner: lease.Owner, Token: lease.Token,
				At: at, Lost: lost, Remaining: last[i].ValidFor() + now.Sub(at), ExpiresAt: last[i].ExpiresAt, Cause: cause.Error(),
				OnArrival: onArrival[i], Margin: w.margin, EndedAtStart: endedAtStart, SchedLag: w.lag.maxSince(at.Add(-time.Second))})
		}
	})
}

// killable is the process the injector may kill now: one whose session
// keeps at least one lease, not yet closing.
func (w *sessionWorker) killable() *process {
	w.mu.Lock()
	defer w.mu.Unlock()
	if p := w.proc; p != nil && !p.closing && p.kept.Load() > 0 && p.session.Err() == nil {
		return p
	}
	return nil
}

// killProcess kills p as SIGKILL would, unless it got to its close first,
// and reports whether it did.
func (w *sessionWorker) killProcess(p *process) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if p.closing {
		return false
	}
	p.kill()
	p.closing = true
	return true
}
