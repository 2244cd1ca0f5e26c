package tui

import (
	"context"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/lockctl/lockctl/internal/lockview"
)

// SharedSource serves many consoles' polls (lockctl serve's sessions) from
// one Source: consoles that ask for the same view within MaxAge of a read
// are handed that read, and those that ask while it is running wait for
// it, so the database's work follows the number of distinct views on
// screen, not the number of consoles. A view is the whole PollRequest
// except the hints a console hands back from its last page (viewOf): a
// field added to PollRequest or ListQuery tells views apart until it is
// named a hint there.
//
// A failed read is handed to everyone waiting for it and not kept: the
// next poll reads again (each console backs off on its own). A read runs
// under the context NewSharedSource was given (the server's), bounded by
// the poll timeout, not under the first caller's: a console that quits
// does not fail the others' poll; the read is cancelled only when every
// caller waiting for it has gone. A read is kept for MaxAge after it
// ended and dropped then, asked for or not, so a view nobody watches any
// more holds nothing and costs nothing.
//
// Snapshots are handed to several consoles at once: the consoles treat
// them as read-only (a page copies what it keeps and changes).
type SharedSource struct {
	ctx    context.Context
	inner  Source
	maxAge time.Duration

	mu    sync.Mutex
	views map[PollRequest]*sharedRead
}

// sharedRead is one read of a view: running until done is closed, then
// its result, kept until maxAge after at.
type sharedRead struct {
	done    chan struct{}
	cancel  context.CancelFunc
	waiters int  // callers waiting for done
	ended   bool // done is closed; snap, err and at are set
	snap    Snapshot
	err     error
	at      time.Time
}

// NewSharedSource shares inner's reads among consoles. maxAge is how long
// a read is handed out again: the server's refresh interval, so a console
// polling at that interval sees data no older than one interval, and
// consoles on the same view soon poll one read per interval between them.
// Reads run under ctx: when it ends, reads in flight are cancelled.
func NewSharedSource(ctx context.Context, inner Source, maxAge time.Duration) *SharedSource {
	return &SharedSource{ctx: ctx, inner: inner, maxAge: maxAge, views: map[PollRequest]*sharedRead{}}
}

// NewSharedPoolSource is NewSharedSource over NewPoolSource(pool).
func NewSharedPoolSource(ctx context.Context, pool *pgxpool.Pool, maxAge time.Duration) *SharedSource {
	return NewSharedSource(ctx, NewPoolSource(pool), maxAge)
}

// viewOf is req without the hints a console hands back from the page it
// last got (lockview.ListQuery's Near, Order and Counts). Consoles on one
// view each hold the page of the read they were last handed; reads taken
// at different times carry different hints (an Order's TakenAt), so keyed
// with them two consoles that once read apart would never share again.
// The hints only make a read cheaper: the read runs with the request of
// the caller that started it.
func viewOf(req PollRequest) PollRequest {
	req.Query.Near, req.Query.Order, req.Query.Counts = lockview.Span{}, lockview.Order{}, lockview.Counts{}
	return req
}

// Poll hands back the view's read if one ended less than maxAge ago or is
// running, else starts one.
func (s *SharedSource) Poll(ctx context.Context, req PollRequest) (Snapshot, error) {
	view := viewOf(req)
	s.mu.Lock()
	r := s.views[view]
	if r == nil || (r.ended && time.Since(r.at) >= s.maxAge) {
		r = s.start(view, req)
	}
	r.waiters++
	s.mu.Unlock()
	select {
	case <-r.done:
		s.leave(view, r)
		return r.snap, r.err
	case <-ctx.Done():
		s.leave(view, r)
		return Snapshot{}, ctx.Err()
	}
}

// Invalidate drops every read kept or running, so each view's next poll
// reads afresh: called when an action ends (Options.ActionDone), so the
// acting console, and every other, sees the change at its next poll
// instead of a read taken before it. Callers already waiting for a
// running read still get it.
func (s *SharedSource) Invalidate() {
	s.mu.Lock()
	defer s.mu.Unlock()
	clear(s.views)
}

// start runs one read of view; s.mu is held.
func (s *SharedSource) start(view, req PollRequest) *sharedRead {
	ctx, cancel := context.WithTimeout(s.ctx, pollTimeout)
	r := &sharedRead{done: make(chan struct{}), cancel: cancel}
	s.views[view] = r
	go func() {
		snap, err := s.inner.Poll(ctx, req)
		cancel()
		s.mu.Lock()
		defer s.mu.Unlock()
		r.snap, r.err, r.at, r.ended = snap, err, time.Now(), true
		close(r.done)
		if err != nil {
			s.forget(view, r)
			return
		}
		time.AfterFunc(s.maxAge, func() {
			s.mu.Lock()
			defer s.mu.Unlock()
			s.forget(view, r)
		})
	}()
	return r
}

// leave is a caller done waiting for r: the last one to give up on a
// running read cancels it.
func (s *SharedSource) leave(view PollRequest, r *sharedRead) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r.waiters--
	if r.waiters == 0 && !r.ended {
		r.cancel()
		s.forget(view, r)
	}
}

// forget drops r from the views if it is still the view's; s.mu is held.
func (s *SharedSource) forget(view PollRequest, r *sharedRead) {
	if s.views[view] == r {
		delete(s.views, view)
	}
}

// kept is how many views have a read kept or running (tests).
func (s *SharedSource) kept() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.views)
}
