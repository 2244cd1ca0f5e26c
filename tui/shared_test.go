package tui

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/lockctl/lockctl/internal/lockview"
	"github.com/lockctl/lockctl/internal/testdb"
)

// gatedSource counts its reads and holds each until the test lets it go
// (or its context ends), so callers can pile up on one read.
type gatedSource struct {
	mu      sync.Mutex
	reads   []PollRequest
	started chan PollRequest
	release chan error // one value per read: its error (nil: success)
	ended   chan error // each read's outcome, ctx.Err() when cancelled
}

func newGatedSource() *gatedSource {
	return &gatedSource{started: make(chan PollRequest, 16), release: make(chan error, 16), ended: make(chan error, 16)}
}

func (g *gatedSource) Poll(ctx context.Context, req PollRequest) (Snapshot, error) {
	g.mu.Lock()
	g.reads = append(g.reads, req)
	n := len(g.reads)
	g.mu.Unlock()
	g.started <- req
	select {
	case err := <-g.release:
		g.ended <- err
		return Snapshot{Server: req.Query.Filter, Latency: time.Duration(n)}, err
	case <-ctx.Done():
		g.ended <- ctx.Err()
		return Snapshot{}, ctx.Err()
	}
}

func (g *gatedSource) count() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.reads)
}

type pollResult struct {
	snap Snapshot
	err  error
}

// pollAsync polls src in a goroutine.
func pollAsync(ctx context.Context, src Source, req PollRequest) <-chan pollResult {
	out := make(chan pollResult, 1)
	go func() {
		snap, err := src.Poll(ctx, req)
		out <- pollResult{snap, err}
	}()
	return out
}

func wait[T any](t *testing.T, c <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-c:
		return v
	case <-time.After(5 * time.Second):
		t.Fatalf("timed out waiting for %s", what)
		panic("unreachable")
	}
}

func TestSharedSource(t *testing.T) {
	view := PollRequest{Query: lockview.ListQuery{Filter: "a", Sort: lockview.SortKey, Before: 10, After: 11}}
	other := view
	other.Query.Filter = "b"
	ctx := context.Background()

	t.Run("identical requests share one read, running or kept", func(t *testing.T) {
		g := newGatedSource()
		s := NewSharedSource(ctx, g, time.Hour)
		first := pollAsync(ctx, s, view)
		wait(t, g.started, "the read")
		// The same view, with another page's hints: the same read.
		hinted := view
		hinted.Query.Counts = lockview.Counts{All: 7}
		second, third := pollAsync(ctx, s, view), pollAsync(ctx, s, hinted)
		testdb.Eventually(t, 5*time.Second, "three callers on the read", func() bool { return s.waitersOf(view) == 3 })
		g.release <- nil
		for _, c := range []<-chan pollResult{first, second, third} {
			if r := wait(t, c, "a poll"); r.err != nil || r.snap.Server != "a" {
				t.Fatalf("poll: %+v", r)
			}
		}
		if snap, err := s.Poll(ctx, view); err != nil || snap.Server != "a" {
			t.Fatalf("kept read: %+v, %v", snap, err)
		}
		if n := g.count(); n != 1 {
			t.Fatalf("%d reads for four polls of one view, want 1", n)
		}
	})

	t.Run("different requests read apart", func(t *testing.T) {
		g := newGatedSource()
		s := NewSharedSource(ctx, g, time.Hour)
		a, b := pollAsync(ctx, s, view), pollAsync(ctx, s, other)
		wait(t, g.started, "a read")
		wait(t, g.started, "the other read")
		g.release <- nil
		g.release <- nil
		if ra, rb := wait(t, a, "a"), wait(t, b, "b"); ra.snap.Server != "a" || rb.snap.Server != "b" {
			t.Fatalf("views mixed up: %+v, %+v", ra, rb)
		}
		if n := g.count(); n != 2 {
			t.Fatalf("%d reads for two views, want 2", n)
		}
	})

	t.Run("a failed read reaches every waiter and is not kept", func(t *testing.T) {
		g := newGatedSource()
		s := NewSharedSource(ctx, g, time.Hour)
		a := pollAsync(ctx, s, view)
		wait(t, g.started, "the read")
		b := pollAsync(ctx, s, view)
		testdb.Eventually(t, 5*time.Second, "two callers on the read", func() bool { return s.waitersOf(view) == 2 })
		boom := errors.New("server gone")
		g.release <- boom
		for _, c := range []<-chan pollResult{a, b} {
			if r := wait(t, c, "a poll"); !errors.Is(r.err, boom) {
				t.Fatalf("poll after a failed read: %v, want %v", r.err, boom)
			}
		}
		g.release <- nil
		if _, err := s.Poll(ctx, view); err != nil || g.count() != 2 {
			t.Fatalf("poll after a failure: %v after %d reads; want a new read", err, g.count())
		}
	})

	t.Run("a kept read expires; invalidate drops it", func(t *testing.T) {
		g := newGatedSource()
		s := NewSharedSource(ctx, g, 50*time.Millisecond)
		g.release <- nil
		if _, err := s.Poll(ctx, view); err != nil {
			t.Fatal(err)
		}
		// Dropped at maxAge, asked for or not.
		testdb.Eventually(t, 5*time.Second, "the kept read dropped", func() bool { return s.kept() == 0 })
		g.release <- nil
		if _, err := s.Poll(ctx, view); err != nil || g.count() != 2 {
			t.Fatalf("poll after maxAge: %v after %d reads, want 2", err, g.count())
		}
		s.Invalidate()
		g.release <- nil
		if _, err := s.Poll(ctx, view); err != nil || g.count() != 3 {
			t.Fatalf("poll after Invalidate: %v after %d reads, want 3", err, g.count())
		}
	})

	t.Run("no read goes on once the last caller has gone", func(t *testing.T) {
		g := newGatedSource()
		s := NewSharedSource(ctx, g, time.Hour)
		c1, cancel1 := context.WithCancel(ctx)
		c2, cancel2 := context.WithCancel(ctx)
		a, b := pollAsync(c1, s, view), pollAsync(c2, s, view)
		wait(t, g.started, "the read")
		testdb.Eventually(t, 5*time.Second, "two callers on the read", func() bool { return s.waitersOf(view) == 2 })
		cancel1()
		if r := wait(t, a, "the first caller"); !errors.Is(r.err, context.Canceled) {
			t.Fatalf("cancelled caller: %v", r.err)
		}
		select {
		case err := <-g.ended:
			t.Fatalf("the read ended (%v) while a caller still waits", err)
		case <-time.After(20 * time.Millisecond):
		}
		cancel2()
		wait(t, b, "the second caller")
		if err := wait(t, g.ended, "the read to be cancelled"); !errors.Is(err, context.Canceled) {
			t.Fatalf("read ended with %v, want cancelled", err)
		}
		if s.kept() != 0 {
			t.Fatalf("%d views kept after every caller left", s.kept())
		}
	})

	t.Run("the server's context cancels reads in flight", func(t *testing.T) {
		g := newGatedSource()
		server, stop := context.WithCancel(ctx)
		s := NewSharedSource(server, g, time.Hour)
		a := pollAsync(ctx, s, view)
		wait(t, g.started, "the read")
		stop()
		if r := wait(t, a, "the poll"); !errors.Is(r.err, context.Canceled) {
			t.Fatalf("poll at shutdown: %v, want cancelled", r.err)
		}
	})
}

// waitersOf is how many callers wait for view's read (tests).
func (s *SharedSource) waitersOf(view PollRequest) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if r := s.views[viewOf(view)]; r != nil {
		return r.waiters
	}
	return 0
}
