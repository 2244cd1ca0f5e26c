package patroni_test

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"testing"
	"time"

	"github.com/lockctl/lockctl/internal/fencetoken"
	"github.com/lockctl/lockctl/internal/lockdb"
	"github.com/lockctl/lockctl/internal/testdb"
	"github.com/lockctl/lockctl/locker"
	"github.com/lockctl/lockctl/tui"
)

// Sizes of the workload: enough of each kind that a change of primary
// meets calls in flight, few enough for two cores.
const (
	cyclers = 4 // keys taken and released over and over
	holders = 2 // leases kept by renewal through both changes
	waiters = 4 // Acquire calls queued on one key through both changes
)

// The story of a service behind Patroni: a switchover, then a failover,
// with lockers, a queue and the console attached through a multi-host
// DSN (see doc.go for what is checked and what is not yet).
func TestSwitchoverAndFailover(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	start := time.Now()
	step := func(what string) { t.Logf("%5.1fs %s", time.Since(start).Seconds(), what) }

	c := startCluster(ctx, t, "node1", "node2")
	step("etcd, node1 leading, node2 its synchronous standby")
	pool := testdb.Pool(t, c.dsn())
	if err := call(ctx, func(ctx context.Context) error { return locker.Migrate(ctx, pool) }); err != nil {
		t.Fatal(err)
	}
	j := &journal{}
	cl := &clients{t: t, pool: pool, j: j,
		lk: testdb.Locker(t, locker.Config{TTL: time.Minute, DurableRelease: true})}
	work, stopWork := context.WithCancel(ctx)
	defer func() { stopWork(); cl.wg.Wait() }()

	for i := range cyclers {
		cl.cycle(work, keyFor("cycle", i), keyFor("cycler", i))
	}
	held := make([]*holder, holders)
	for i := range held {
		held[i] = cl.hold(work, keyFor("held", i), keyFor("holder", i))
	}
	queueHolder := cl.hold(work, "queue", "queue-holder")
	sessions := make([]*sessionHolder, sessionProcs)
	for i := range sessions {
		sessions[i] = cl.keepInSession(work, keyFor("session", i))
	}

	// The waiters' records must outlive the outage (3×WaitRecheck), and
	// their Notifier follows the primary through the same DSN.
	notifier := locker.NewNotifier(locker.NotifierConfig{
		Connect: lockdb.ConnectWith(pool.Config().ConnConfig), Probe: pool, Logf: t.Logf})
	cl.wg.Add(1)
	go func() { defer cl.wg.Done(); _ = notifier.Run(work) }()
	waitLk := testdb.Locker(t, locker.Config{TTL: time.Minute, DurableRelease: true,
		Notifier: notifier, WaitRecheck: 30 * time.Second})
	got := make(chan string, waiters)
	for i := range waiters {
		owner := keyFor("waiter", i)
		cl.wait(work, waitLk, "queue", owner, queueHolder.letGoAt, got)
		testdb.WaitForWaiter(t, pool, "queue", owner)
	}

	watcher := watch(work, tui.NewPoolSource(testdb.Pool(t, c.dsn()+" pool_max_conns=2")))
	renewing := append(append([]*holder{}, held...), queueHolder)
	expectAfter := func(change string, done time.Time, leader string) {
		t.Helper()
		server := "127.0.0.1:" + strconv.Itoa(c.node(leader).pgPort)
		var renewed []string
		followed := func() bool {
			renewed = renewed[:0]
			for _, h := range renewing {
				if h.renewedSince(done) {
					renewed = append(renewed, h.key)
				}
			}
			for _, s := range sessions {
				if s.beatSince(done) {
					renewed = append(renewed, s.owner)
				}
			}
			return len(renewed) == len(renewing)+len(sessions) && j.grantsSince(done) >= cyclers && watcher.namedSince(done, server)
		}
		if !testdb.Within(30*time.Second, followed) {
			t.Fatalf("after the %s: within 30s, %d grants, renewed %v of %d leases and %d sessions, the console on %s (want %s)",
				change, j.grantsSince(done), renewed, len(renewing), len(sessions), watcher.describe(), server)
		}
	}
	expectAfter("start", start, "node1")
	step("lockers, waiters and the console running on node1")

	began := time.Now()
	c.switchover(ctx, "node1", "node2")
	c.waitFor(ctx, 60*time.Second, "node2 leading after the switchover", func(s clusterState) bool { return s.leader() == "node2" })
	done := time.Now()
	switchover := change{what: "switchover to node2", began: began, done: done}
	j.changed(switchover)
	expectAfter("switchover", done, "node2")
	for _, s := range sessions {
		s.carriedOn(ctx, t, switchover, false)
	}
	step("switchover: node2 leads; grants, renewals, sessions and the console followed")

	// Only a synchronous standby may take over without losing what the
	// primary acknowledged; commits made after it became one prove it
	// streams.
	c.waitFor(ctx, 90*time.Second, "node1 back as node2's synchronous standby", func(s clusterState) bool {
		return s.leader() == "node2" && fmt.Sprint(s.syncStandbys()) == "[node1]"
	})
	synced := time.Now()
	c.waitUntil(ctx, 30*time.Second, "grants acknowledged by node1 as synchronous standby", func() bool {
		return j.grantsSince(synced) >= cyclers
	})
	step("node1 back as the synchronous standby")

	began = time.Now()
	c.crash(c.node("node2"))
	c.waitFor(ctx, 90*time.Second, "node1 leading after node2 died", func(s clusterState) bool { return s.leader() == "node1" })
	done = time.Now()
	failover := change{what: "failover to node1", began: began, done: done}
	j.changed(failover)
	expectAfter("failover", done, "node1")
	for _, s := range sessions {
		s.carriedOn(ctx, t, failover, true)
	}
	step("failover: node2's Patroni and PostgreSQL killed, node1 leads; grants, renewals, sessions and the console followed")

	// The hand-offs reach the waiters through the Notifier, which must
	// have found node1 too; without it they would find their grants only
	// at their next check.
	c.waitUntil(ctx, 30*time.Second, "the waiters' Notifier listening again", notifier.Live)
	step("the waiters' Notifier listening on node1")
	close(queueHolder.letGo)
	var served []string
	c.waitUntil(ctx, 90*time.Second, "every waiter to have had the queue's key", func() bool {
		for {
			select {
			case owner := <-got:
				served = append(served, owner)
			default:
				return len(served) == waiters
			}
		}
	})
	step("the queue drained: " + fmt.Sprint(served))

	for _, h := range held {
		close(h.letGo)
		<-h.released
	}
	for _, s := range sessions {
		s.close(ctx, t, j)
	}
	stopWork()
	cl.wg.Wait()
	if t.Failed() {
		return
	}
	violations, noGrants := j.tokenViolations()
	if len(noGrants) > 0 {
		t.Errorf("no grant after: %v; the token check saw nothing", noGrants)
	}
	for _, v := range violations {
		t.Error(v)
	}
	undone, err := j.undoneReleases(ctx, cl.lk, pool)
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(undone)
	for _, u := range undone {
		t.Errorf("acknowledged release undone: %s", u)
	}
	j.mu.Lock()
	t.Logf("%d grants, %d acknowledged releases, tokens up to %s; %s in all",
		len(j.grants), len(j.releases), fencetoken.Format(maxToken(j.grants)), time.Since(start).Round(time.Second))
	j.mu.Unlock()
}

func maxToken(gs []grant) int64 {
	var m int64
	for _, g := range gs {
		m = max(m, g.token)
	}
	return m
}
