package lockview_test

import (
	"context"
	"testing"
	"time"

	"github.com/lockctl/lockctl/internal/lockview"
	"github.com/lockctl/lockctl/internal/testdb"
)

// Consecutive counts cover consecutive spans: each event is counted once,
// none before settle has passed, and deleting counted events (prune)
// changes nothing later.
func TestCountEventsSpans(t *testing.T) {
	pool := testdb.New(t)
	ctx := context.Background()
	insert := func(age string, kind string) {
		t.Helper()
		if _, err := pool.Exec(ctx, `INSERT INTO distributed_lock_event (occurred_at, lock_key, kind, owner_id, fence_token, actor)
			VALUES (clock_timestamp() - $1::interval, 'k', $2, 'o', 1, 'a')`, age, kind); err != nil {
			t.Fatal(err)
		}
	}
	insert("1 hour", "acquired")
	insert("10 minutes", "stolen")
	insert("1 second", "force_expired") // younger than the settle below

	first, err := lockview.CountEvents(ctx, pool, time.Time{}, 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if first.ByKind["acquired"] != 1 || first.ByKind["stolen"] != 1 || len(first.ByKind) != 2 {
		t.Fatalf("first count = %v; want the two events older than the settle", first.ByKind)
	}
	if _, err := pool.Exec(ctx, `DELETE FROM distributed_lock_event WHERE occurred_at < clock_timestamp() - interval '5 minutes'`); err != nil {
		t.Fatal(err)
	}
	second, err := lockview.CountEvents(ctx, pool, first.Through, 0)
	if err != nil {
		t.Fatal(err)
	}
	if second.ByKind["force_expired"] != 1 || len(second.ByKind) != 1 || !second.Through.After(first.Through) {
		t.Fatalf("second count = %v through %v; want only the force_expired event, after %v", second.ByKind, second.Through, first.Through)
	}
	third, err := lockview.CountEvents(ctx, pool, second.Through, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(third.ByKind) != 0 {
		t.Fatalf("third count = %v; want nothing new", third.ByKind)
	}
}

// The gauges count rows by state as ls shows them, and the waits.
func TestReadGauges(t *testing.T) {
	pool := testdb.New(t)
	ctx := context.Background()
	empty, err := lockview.ReadGauges(ctx, pool)
	if err != nil {
		t.Fatal(err)
	}
	if empty != (lockview.Gauges{}) {
		t.Fatalf("gauges of an empty table = %+v; want zeros", empty)
	}
	if _, err := pool.Exec(ctx, `
INSERT INTO distributed_lock (lock_key, owner_id, fence_token, expires_at, ttl, acquired_at, released_at) VALUES
  ('held',     'o', 1, clock_timestamp() + interval '1 minute', interval '2 minutes', clock_timestamp() - interval '1 hour', NULL),
  ('expiring', 'o', 2, clock_timestamp() + interval '2 seconds', interval '1 minute', clock_timestamp() - interval '1 minute', NULL),
  ('expired',  'o', 3, clock_timestamp() - interval '1 second', interval '1 minute', clock_timestamp() - interval '2 hours', NULL),
  ('free',     'o', 4, clock_timestamp() - interval '1 second', interval '1 minute', clock_timestamp() - interval '3 hours', clock_timestamp());
INSERT INTO distributed_lock (lock_key, owner_id, fence_token, expires_at, ttl, acquired_at, released_at, lock_delay, delay_until) VALUES
  ('delayed after expiry', 'o', 5, clock_timestamp() - interval '1 second', interval '1 minute', clock_timestamp() - interval '1 minute', NULL, interval '1 minute', NULL),
  ('delayed after a force-release', 'o', 6, clock_timestamp() + interval '1 second', interval '1 minute', clock_timestamp() - interval '1 minute', clock_timestamp(), interval '1 minute', clock_timestamp() + interval '1 minute');
INSERT INTO distributed_lock_waiter (lock_key, owner_id, waiting_since, seen_until) VALUES
  ('held', 'w1', clock_timestamp() - interval '90 seconds', clock_timestamp() + interval '1 minute'),
  ('held', 'w2', clock_timestamp() - interval '5 seconds', clock_timestamp() + interval '1 minute'),
  ('expiring', 'w3', clock_timestamp() - interval '1 second', clock_timestamp() + interval '1 minute'),
  ('held', 'dead', clock_timestamp() - interval '1 hour', clock_timestamp() - interval '1 second')`); err != nil {
		t.Fatal(err)
	}
	g, err := lockview.ReadGauges(ctx, pool)
	if err != nil {
		t.Fatal(err)
	}
	if g.Held != 1 || g.Expiring != 1 || g.Expired != 1 || g.Free != 1 || g.Delayed != 2 || g.Waiters != 3 || g.WaitedKeys != 2 {
		t.Fatalf("gauges = %+v; want one lock in each state but two delayed, 3 live waiters on 2 keys", g)
	}
	// The oldest live grant is held's (an hour); expired's two hours do not count.
	if g.OldestHeld < time.Hour || g.OldestHeld > time.Hour+time.Minute {
		t.Errorf("oldest held = %s; want about an hour", g.OldestHeld)
	}
	// The dead waiter's hour does not count.
	if g.LongestWait < 90*time.Second || g.LongestWait > 2*time.Minute {
		t.Errorf("longest wait = %s; want about 90s", g.LongestWait)
	}
	top, err := lockview.TopWaited(ctx, pool, 1)
	if err != nil {
		t.Fatal(err)
	}
	if len(top) != 1 || top[0].Key != "held" || top[0].Waiters != 2 {
		t.Errorf("top waited key = %+v; want held with 2", top)
	}
}
