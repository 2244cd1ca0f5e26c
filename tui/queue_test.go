package tui

import (
	"context"
	"regexp"

	"strings"
	"testing"
	"time"

	"github.com/lockctl/lockctl/internal/fencetoken"
	"github.com/lockctl/lockctl/internal/testdb"
	"github.com/lockctl/lockctl/locker"
	"github.com/lockctl/lockctl/store"
)

// The detail pane lists a key's waiters in queue order, each with its
// position and how long it has waited; the header shows how fast recent
// hand-offs to waiters were (a release handing the key to its queue does
// it in its own transaction).
func TestQueuePositionsAndHandOffLatency(t *testing.T) {
	pool := testdb.New(t)
	ctx := context.Background()
	holder := acquire(t, pool, "billing:nightly", "worker-1", time.Minute)
	for _, owner := range []string{"waiter-a", "waiter-b", "waiter-c"} {
		if _, _, err := store.Enqueue(ctx, pool, store.QueueParams{
			GrantParams: store.GrantParams{Key: "billing:nightly", Owner: owner, TTL: time.Minute, LogGrants: true},
			ClaimWindow: time.Minute, SeenFor: time.Minute,
		}); err != nil {
			t.Fatal(err)
		}
	}
	lk, err := locker.New(locker.Config{LogGrants: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := testdb.One(lk.Release(ctx, pool, holder)); err != nil { // hands the key to waiter-a
		t.Fatal(err)
	}
	m := dbModel(t, pool, Options{}, 140, 40)
	m, cmd := update(t, m, keyMsg("enter"))
	m = runPoll(t, m, cmd)
	s := screen(m)
	// Same transaction: well under a second, whatever the machine's load.
	if !regexp.MustCompile(`hand-off (<1ms|\d{1,3}ms)`).MatchString(s) {
		t.Fatalf("header lacks the hand-off latency:\n%s", s)
	}
	b, c := strings.Index(s, "1. waiter-b"), strings.Index(s, "2. waiter-c")
	if b < 0 || c < b || strings.Contains(s, "waiter-a  waiting") || !strings.Contains(s, "in queue order") {
		t.Fatalf("detail pane does not list waiter-b then waiter-c as the queue:\n%s", s)
	}
}

// A holder waiting to upgrade its shared lease is a waiter of its own
// kind: the detail pane says so, naming the lease it keeps until then.
func TestDetailShowsAnUpgradeWaiting(t *testing.T) {
	pool := testdb.New(t)
	ctx := context.Background()
	lk, err := locker.New(locker.Config{TTL: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	read := func(owner string) locker.Lease {
		lease, err := testdb.One(lk.Acquire(ctx, pool, locker.Request{
			Keys: []locker.Key{{Name: "catalog", Mode: locker.ModeShared}}, Owner: owner}))
		if err != nil {
			t.Fatal(err)
		}
		return lease
	}
	upgrader := read("indexer")
	read("reporter")
	done := make(chan error, 1)
	uctx, cancel := context.WithCancel(ctx)
	defer func() { cancel(); <-done }()
	go func() { _, err := lk.Upgrade(uctx, pool, upgrader, locker.WaitForever); done <- err }()
	testdb.WaitForWaiter(t, pool, "catalog", "indexer")
	m := dbModel(t, pool, Options{}, 140, 40)
	m, cmd := update(t, m, keyMsg("enter"))
	m = runPoll(t, m, cmd)
	s := screen(m)
	if !regexp.MustCompile(`1\. indexer  upgrade from token ` + regexp.QuoteMeta(fencetoken.Format(upgrader.Token)) + `  waiting`).MatchString(s) {
		t.Fatalf("detail pane does not show indexer's upgrade waiting:\n%s", s)
	}
}
