package tui

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/lockctl/lockctl/locker"
)

// recordingSource answers every poll with one snapshot, as a shared source
// serving a cached read would, and keeps the requests.
type recordingSource struct {
	mu   sync.Mutex
	snap Snapshot
	reqs []PollRequest
}

func (s *recordingSource) Poll(_ context.Context, req PollRequest) (Snapshot, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reqs = append(s.reqs, req)
	return s.snap, nil
}

func (s *recordingSource) last() PollRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.reqs[len(s.reqs)-1]
}

// The console polls through Options.Source: the request says what the page
// on screen needs, and a snapshot read earlier (a shared source's cached
// one) counts down from when it was read, not from when it arrived.
func TestPollsGoThroughTheSource(t *testing.T) {
	snap := fixtureSnapshot()
	snap.ReadAt = t0.Add(-10 * time.Second)
	src := &recordingSource{snap: snap}
	m := testModel(t, Options{Source: src}, 120, 35)
	m = runPoll(t, m, poll(m.ctx, m.source, m.seq, m.querySeq, m.pollRequest()))
	if req := src.last(); req.Query.Sort != "key" || req.DetailKey != "" || req.Events || !req.Caps {
		t.Fatalf("table poll asked %+v", req)
	}
	// billing:nightly had 22s left when read, 11.5s ago.
	if row := rowLine(t, m, "billing:nightly"); !strings.Contains(row, " 10.5s ") {
		t.Errorf("a snapshot read 11.5s ago does not count down from its read: %q", row)
	}
	m, cmd := update(t, m, keyMsg("enter"))
	m = runPoll(t, m, cmd)
	if req := src.last(); req.DetailKey != "billing:nightly" || req.Query.Anchor != "billing:nightly" {
		t.Fatalf("detail poll asked %+v", req)
	}
	m, cmd = update(t, press(t, m, "esc"), keyMsg("e"))
	m = runPoll(t, m, cmd)
	if req := src.last(); !req.Events || req.DetailKey != "" {
		t.Fatalf("events poll asked %+v", req)
	}
}

// Options.ActionDone hears of every action once it has ended, a failed
// one too.
func TestActionDoneIsCalledAfterEachAction(t *testing.T) {
	dead, err := pgxpool.New(context.Background(), "postgres://nobody@127.0.0.1:1/none?connect_timeout=1")
	if err != nil {
		t.Fatal(err)
	}
	defer dead.Close()
	lk, err := locker.New(locker.Config{})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	calls := 0
	m := testModel(t, Options{Pool: dead, Locker: lk, Source: &recordingSource{snap: fixtureSnapshot()},
		ActionDone: func() { mu.Lock(); calls++; mu.Unlock() }}, 120, 35)
	m = withSnapshot(t, m, fixtureSnapshot())
	m, cmd := update(t, m, keyMsg("r"))
	if cmd == nil {
		t.Fatal("r sent nothing")
	}
	done, ok := cmd().(actionDoneMsg)
	if !ok || done.err == nil {
		t.Fatalf("renew against a dead database: %+v", done)
	}
	mu.Lock()
	defer mu.Unlock()
	if calls != 1 {
		t.Fatalf("ActionDone called %d times, want 1", calls)
	}
}
