package election_test

import (
	"context"
	"errors"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/lockctl/lockctl/internal/lockdb"
	"github.com/lockctl/lockctl/internal/testdb"
	"github.com/lockctl/lockctl/internal/workload"
	"github.com/lockctl/lockctl/locker"
	"github.com/lockctl/lockctl/locker/election"
)

func TestMain(m *testing.M) { os.Exit(testdb.Main(m)) }

func candidate(t *testing.T, db *pgxpool.Pool, owner string, lc locker.Config) *election.Election {
	t.Helper()
	e, err := election.New(db, "leader", election.Config{
		Locker: lc, Owner: owner, Recheck: 30 * time.Second,
		Listen: lockdb.ConnectWith(db.Config().ConnConfig),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Resign(context.Background()) })
	return e
}

type won struct {
	term int64
	err  error
}

func campaign(ctx context.Context, e *election.Election, value string) <-chan won {
	ch := make(chan won, 1)
	go func() {
		term, err := e.Campaign(ctx, value)
		ch <- won{term, err}
	}()
	return ch
}

func TestResignHandsLeadershipToTheNextCandidate(t *testing.T) {
	ctx := context.Background()
	db := testdb.New(t)
	lc := locker.Config{TTL: time.Minute, Notifier: workload.StartNotifier(t, db.Config().ConnConfig), WaitRecheck: 30 * time.Second}
	a, b := candidate(t, db, "a", lc), candidate(t, db, "b", lc)

	termA, err := a.Campaign(ctx, "http://a")
	if err != nil {
		t.Fatal(err)
	}
	if l, err := b.Leader(ctx); err != nil || l.Owner != "a" || l.Value != "http://a" || l.Term != termA {
		t.Fatalf("leader = %+v, %v; want a at term %d", l, err, termA)
	}
	got := campaign(ctx, b, "http://b")
	testdb.WaitForWaiter(t, db, "leader", "b")
	select {
	case w := <-got:
		t.Fatalf("b won %+v while a leads", w)
	default:
	}
	if err := a.Resign(ctx); err != nil {
		t.Fatal(err)
	}
	if a.Context().Err() == nil {
		t.Fatal("a's leadership context still runs after Resign")
	}
	w := <-got
	if w.err != nil || w.term <= termA {
		t.Fatalf("b's campaign = %+v; want a term above %d", w, termA)
	}
	if l, err := a.Leader(ctx); err != nil || l.Owner != "b" || l.Value != "http://b" || l.Term != w.term {
		t.Fatalf("leader = %+v, %v; want b at term %d", l, err, w.term)
	}
}

func TestDeadLeaderIsFollowedWhenItsLeaseEnds(t *testing.T) {
	ctx := context.Background()
	db := testdb.New(t)
	lc := locker.Config{TTL: time.Minute, WaitRecheck: 200 * time.Millisecond, RenewEvery: 100 * time.Millisecond}
	a, b := candidate(t, db, "a", lc), candidate(t, db, "b", lc)
	termA, err := a.Campaign(ctx, "a")
	if err != nil {
		t.Fatal(err)
	}
	got := campaign(ctx, b, "b")
	testdb.WaitForWaiter(t, db, "leader", "b")
	testdb.ExpireLease(t, db, "leader") // a's process died a TTL ago
	w := <-got
	if w.err != nil || w.term <= termA {
		t.Fatalf("b's campaign = %+v; want a term above %d", w, termA)
	}
	<-a.Context().Done()
	if err := a.Proclaim(ctx, "still a"); !errors.Is(err, locker.ErrNotHeld) {
		t.Fatalf("deposed leader's Proclaim = %v; want ErrNotHeld", err)
	}
	if l, _ := b.Leader(ctx); l.Value != "b" {
		t.Fatalf("leader = %+v; the deposed leader's proclamation changed it", l)
	}
}

func TestProclaimChangesTheValueOnlyForTheLeader(t *testing.T) {
	ctx := context.Background()
	db := testdb.New(t)
	a, b := candidate(t, db, "a", locker.Config{}), candidate(t, db, "b", locker.Config{})
	if err := a.Proclaim(ctx, "x"); !errors.Is(err, locker.ErrNotHeld) {
		t.Fatalf("Proclaim before Campaign = %v; want ErrNotHeld", err)
	}
	if _, err := b.Leader(ctx); !errors.Is(err, election.ErrNoLeader) {
		t.Fatalf("Leader with nobody campaigning = %v; want ErrNoLeader", err)
	}
	term, err := a.Campaign(ctx, "one")
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Proclaim(ctx, "two"); err != nil {
		t.Fatal(err)
	}
	if err := b.Proclaim(ctx, "forged"); !errors.Is(err, locker.ErrNotHeld) {
		t.Fatalf("a candidate's Proclaim = %v; want ErrNotHeld", err)
	}
	if l, err := b.Leader(ctx); err != nil || l.Value != "two" || l.Term != term || l.Owner != "a" {
		t.Fatalf("leader = %+v, %v; want a's value two at term %d", l, err, term)
	}
}

func TestObserveReportsEachLeaderInTermOrder(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	db := testdb.New(t)
	lc := locker.Config{TTL: time.Minute, Notifier: workload.StartNotifier(t, db.Config().ConnConfig), WaitRecheck: 30 * time.Second}
	a, b, o := candidate(t, db, "a", lc), candidate(t, db, "b", lc), candidate(t, db, "o", lc)
	seen := o.Observe(ctx)
	next := func(what string) election.Leader {
		t.Helper()
		select {
		case l := <-seen:
			return l
		case <-time.After(10 * time.Second): // far below Recheck: only a NOTIFY explains it
			t.Fatalf("Observe reported nothing for %s", what)
			return election.Leader{}
		}
	}
	termA, err := a.Campaign(ctx, "a1")
	if err != nil {
		t.Fatal(err)
	}
	if l := next("a's win"); l.Owner != "a" || l.Term != termA || l.Value != "a1" {
		t.Fatalf("observed %+v; want a at term %d", l, termA)
	}
	if err := a.Proclaim(ctx, "a2"); err != nil {
		t.Fatal(err)
	}
	if l := next("a's proclamation"); l.Value != "a2" || l.Term != termA {
		t.Fatalf("observed %+v; want a2 at term %d", l, termA)
	}
	// A forged notification is only a hint: nothing changed, nothing is
	// reported.
	if _, err := db.Exec(ctx, `SELECT pg_notify('distributed_lock', 'leader')`); err != nil {
		t.Fatal(err)
	}
	got := campaign(ctx, b, "b1")
	testdb.WaitForWaiter(t, db, "leader", "b")
	if err := a.Resign(ctx); err != nil {
		t.Fatal(err)
	}
	w := <-got
	if l := next("b's win"); l.Owner != "b" || l.Term != w.term || l.Term <= termA {
		t.Fatalf("observed %+v; want b at term %d above %d", l, w.term, termA)
	}
	select {
	case l := <-seen:
		t.Fatalf("observed %+v after b's win; want nothing more", l)
	case <-time.After(200 * time.Millisecond):
	}
}

func listenTo(db *pgxpool.Pool) func(context.Context) (*pgx.Conn, error) {
	return lockdb.ConnectWith(db.Config().ConnConfig)
}
