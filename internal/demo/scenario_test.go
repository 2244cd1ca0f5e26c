package demo_test

import (
	"context"
	"errors"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/lockctl/lockctl/internal/demo"
	"github.com/lockctl/lockctl/internal/lockdb"
	"github.com/lockctl/lockctl/internal/lockview"
	"github.com/lockctl/lockctl/internal/operator"
	"github.com/lockctl/lockctl/internal/testdb"
	"github.com/lockctl/lockctl/locker"
	"github.com/lockctl/lockctl/store"
)

// Queries the test reads the story back with.
const (
	biggerStealSQL = `SELECT count(*) FROM distributed_lock_event
		WHERE kind = 'stolen' AND fence_token > previous_token`
	// A refused ledger write, and the token of the grant that replaced it.
	staleWriteSQL = `SELECT e.owner_id, e.fence_token, e.detail->>'resource'
		FROM distributed_lock_event e
		WHERE e.kind = 'stale_write_rejected' AND e.lock_key = 'ledger:balance'
		ORDER BY e.event_id LIMIT 1`
	successorSQL = `SELECT owner_id, fence_token FROM distributed_lock_event
		WHERE lock_key = 'ledger:balance' AND kind IN ('stolen', 'acquired') AND fence_token > $1
		ORDER BY event_id LIMIT 1`
	resourceSQL = `SELECT last_token, last_owner, writes FROM demo_resource WHERE resource_key = 'ledger:balance'`
	handOffSQL  = `SELECT count(*) FROM distributed_lock_event
		WHERE kind = 'acquired' AND detail ? 'waited_ms' AND previous_owner IS NOT NULL AND previous_owner <> owner_id`
	heldSQL = `SELECT count(*) FROM distributed_lock
		WHERE released_at IS NULL AND expires_at > clock_timestamp()`
	waitersSQL = `SELECT count(*) FROM distributed_lock_waiter`
	// Owners holding two or more live leases among keys LIKE $1, now.
	heldTogetherSQL = `SELECT owner_id, array_agg(lock_key ORDER BY lock_key)::text[] FROM distributed_lock
		WHERE lock_key LIKE $1 AND released_at IS NULL AND expires_at > clock_timestamp()
		GROUP BY owner_id HAVING count(*) >= 2`
	// A grant of an account key that ended a wait behind another owner
	// (the transfer behind a teller, or a teller behind the transfer).
	accountHandOffSQL = `SELECT count(*) FROM distributed_lock_event
		WHERE lock_key LIKE 'accounts:%' AND kind IN ('acquired', 'stolen') AND detail ? 'waited_ms'
		AND previous_owner <> owner_id AND 'transfer-1' IN (owner_id, previous_owner)`
	// The grant that ended backup-2's wait for backup:nightly after token
	// $1, and the waiter record it was handed to.
	backupGrantSQL = `SELECT occurred_at, coalesce((detail->>'waiter_id')::bigint, 0) FROM distributed_lock_event
		WHERE lock_key = 'backup:nightly' AND kind IN ('acquired', 'stolen') AND owner_id = 'backup-2'
		AND fence_token > $1 ORDER BY event_id LIMIT 1`
)

func count(t *testing.T, pool *pgxpool.Pool, sql string) int {
	t.Helper()
	var n int
	if err := pool.QueryRow(context.Background(), sql).Scan(&n); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return n
}

func TestStory(t *testing.T) {
	ctx := context.Background()
	pool := testdb.New(t)
	sim, err := demo.Start(ctx, pool, demo.Config{Workers: 6, HotKeys: 2, Speed: 8, Seed: 42, CrashChance: 0.5})
	if err != nil {
		t.Fatal(err)
	}
	stopped := false
	t.Cleanup(func() {
		if !stopped {
			sim.Stop()
		}
	})
	if sim.Seed() != 42 {
		t.Fatalf("Seed() = %d, want 42", sim.Seed())
	}

	const within = 30 * time.Second
	testdb.Eventually(t, within, "a steal with a larger token", func() bool {
		return count(t, pool, biggerStealSQL) > 0 && sim.Stats().Stolen > 0
	})
	testdb.Eventually(t, within, "a crashed contender", func() bool { return sim.Stats().Crashes > 0 })
	testdb.Eventually(t, within, "a stale_write_rejected event and the refused counter", func() bool {
		return count(t, pool, `SELECT count(*) FROM distributed_lock_event WHERE kind = 'stale_write_rejected'`) > 0 &&
			sim.Stats().WritesRefused > 0
	})
	var zombie, resource string
	var zombieToken int64
	if err := pool.QueryRow(ctx, staleWriteSQL).Scan(&zombie, &zombieToken, &resource); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(resource, "demo_resource") {
		t.Errorf("stale write event names resource %q; want demo_resource", resource)
	}
	var successor string
	var successorToken int64
	if err := pool.QueryRow(ctx, successorSQL, zombieToken).Scan(&successor, &successorToken); err != nil {
		t.Fatalf("no grant on ledger:balance after the refused token %d: %v", zombieToken, err)
	}
	if successor == zombie {
		t.Errorf("the grant after %s's token %d went to %s itself; want the other writer", zombie, zombieToken, successor)
	}
	testdb.Eventually(t, within, "an accepted write by the new holder", func() bool {
		var last int64
		var owner string
		var writes int64
		if err := pool.QueryRow(ctx, resourceSQL).Scan(&last, &owner, &writes); err != nil {
			t.Fatal(err)
		}
		return last >= successorToken && sim.Stats().WritesOK > 0
	})
	testdb.Eventually(t, within, "waiters handing over", func() bool {
		return count(t, pool, handOffSQL) > 0 && sim.Stats().HandOffs > 0
	})

	freeStuckLock(t, pool, sim)
	transferHoldsBoth(t, pool, sim)
	delayedKeyServed(t, pool)
	deadlockReported(t, pool, sim)

	st := sim.Stats()
	if st.Errors != 0 {
		t.Errorf("the cast hit %d database errors (the last: %s)", st.Errors, st.LastError)
	}
	if !strings.Contains(sim.Status(), "seed 42") {
		t.Errorf("Status() = %q; want the seed in it", sim.Status())
	}

	sim.Stop()
	stopped = true
	if n := count(t, pool, heldSQL); n != 0 {
		t.Errorf("after Stop, %d locks are still held", n)
	}
	if n := count(t, pool, waitersSQL); n != 0 {
		t.Errorf("after Stop, %d waiter records remain", n)
	}
	if left := leftovers(); left != "" {
		t.Errorf("after Stop, goroutines of the sim remain:\n%s", left)
	}
}

// freeStuckLock plays the operator: the hung report holds reports:stuck for
// an hour with a waiter behind it; a force-expire lets the waiter take it at
// once.
func freeStuckLock(t *testing.T, pool *pgxpool.Pool, sim *demo.Sim) {
	t.Helper()
	ctx := context.Background()
	var stuck lockdb.LockInfo
	testdb.Eventually(t, 30*time.Second, "reports:stuck held by report-gen with a waiter", func() bool {
		l, found, err := store.Get[lockdb.LockInfo](ctx, pool, "reports:stuck")
		if err != nil {
			t.Fatal(err)
		}
		ws, err := lockview.Waiters(ctx, pool, "reports:stuck")
		if err != nil {
			t.Fatal(err)
		}
		stuck = l
		return found && l.State() == lockdb.StateHeld && strings.HasPrefix(l.Owner, "report-gen") && len(ws) > 0
	})
	if stuck.TTL != demo.StuckTTL || stuck.Remaining < 50*time.Minute {
		t.Fatalf("stuck lock TTL %s, remaining %s; want a one-hour lease", stuck.TTL, stuck.Remaining)
	}
	before := sim.Stats().OperatorFreed
	op, err := operator.New("test-operator")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := op.ForceExpire(ctx, pool, "reports:stuck", stuck.Token); err != nil {
		t.Fatal(err)
	}
	// "At once": the waiter rechecks only every 5s on its own, so taking the
	// key within 2s means the force-expire's NOTIFY woke it.
	testdb.Eventually(t, 2*time.Second, "the waiter taking reports:stuck after the force-expire", func() bool {
		l, _, err := store.Get[lockdb.LockInfo](ctx, pool, "reports:stuck")
		if err != nil {
			t.Fatal(err)
		}
		return l.Owner == "report-retry" && l.Token > stuck.Token && l.State() != lockdb.StateExpired
	})
	// The retry counts the hand-off just after its grant commits, so the
	// row can show the new owner a moment before the counter does.
	testdb.Eventually(t, 2*time.Second, "OperatorFreed counting the hand-off", func() bool {
		return sim.Stats().OperatorFreed == before+1
	})
}

// heldTogether is the owner holding two keys matching pattern at once, and
// those keys, or "" when nobody does now.
func heldTogether(t *testing.T, pool *pgxpool.Pool, pattern string) (string, []string) {
	t.Helper()
	var owner string
	var keys []string
	err := pool.QueryRow(context.Background(), heldTogetherSQL, pattern).Scan(&owner, &keys)
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		t.Fatal(err)
	}
	return owner, keys
}

// transferHoldsBoth: the transfer holds two accounts' keys at once, moves
// money, and contends with the tellers (a hand-off between the transfer and
// a teller on an account key).
func transferHoldsBoth(t *testing.T, pool *pgxpool.Pool, sim *demo.Sim) {
	t.Helper()
	var owner string
	var keys []string
	testdb.Eventually(t, 30*time.Second, "one owner holding two account keys at once", func() bool {
		owner, keys = heldTogether(t, pool, "accounts:%")
		return owner != ""
	})
	if owner != "transfer-1" || len(keys) != 2 {
		t.Errorf("%s holds %v at once; want transfer-1 holding two accounts", owner, keys)
	}
	testdb.Eventually(t, 30*time.Second, "a transfer counted and a hand-off between the transfer and a teller", func() bool {
		return sim.Stats().Transfers > 0 && count(t, pool, accountHandOffSQL) > 0
	})
}

// delayedKeyServed: backup:nightly, whose holder crashed, is delayed with
// backup-2 queued; nobody is granted it during the delay, and backup-2,
// which kept its place, is granted it when the delay ends.
func delayedKeyServed(t *testing.T, pool *pgxpool.Pool) {
	t.Helper()
	ctx := context.Background()
	var delayed lockdb.LockInfo
	var queued []lockview.Waiter
	testdb.Eventually(t, 30*time.Second, "backup:nightly delayed with backup-2 queued", func() bool {
		l, found, err := store.Get[lockdb.LockInfo](ctx, pool, "backup:nightly")
		if err != nil {
			t.Fatal(err)
		}
		if queued, err = lockview.Waiters(ctx, pool, "backup:nightly"); err != nil {
			t.Fatal(err)
		}
		delayed = l
		return found && l.State() == lockdb.StateDelayed && len(queued) == 1 && queued[0].Owner == "backup-2"
	})
	if !strings.HasPrefix(delayed.Owner, "backup-1") || delayed.DelayUntil == nil || !delayed.DelayUntil.After(delayed.DBNow) {
		t.Fatalf("backup:nightly delayed: owner %q, delay until %v at %v; want backup-1's crashed lease, delayed into the future",
			delayed.Owner, delayed.DelayUntil, delayed.DBNow)
	}
	var grantedAt time.Time
	var handedTo int64
	testdb.Eventually(t, 30*time.Second, "backup-2 granted backup:nightly", func() bool {
		err := pool.QueryRow(ctx, backupGrantSQL, delayed.Token).Scan(&grantedAt, &handedTo)
		if err != nil && !errors.Is(err, pgx.ErrNoRows) {
			t.Fatal(err)
		}
		return err == nil
	})
	if grantedAt.Before(*delayed.DelayUntil) {
		t.Errorf("backup-2 was granted backup:nightly at %s, inside the delay (until %s)", grantedAt, delayed.DelayUntil)
	}
	// Handed to the record queued during the delay: it kept its place.
	if handedTo != queued[0].ID {
		t.Errorf("backup:nightly was handed to waiter record %d; backup-2 waited through the delay as record %d",
			handedTo, queued[0].ID)
	}
}

// deadlockReported: the syncers deadlock; one is told (ErrDeadlock, counted
// on the status line) and gives up its key, and the other then holds both
// inventory keys.
func deadlockReported(t *testing.T, pool *pgxpool.Pool, sim *demo.Sim) {
	t.Helper()
	testdb.Eventually(t, 30*time.Second, "a deadlock reported", func() bool { return sim.Stats().Deadlocks > 0 })
	if !strings.Contains(sim.Status(), "deadlocks ") {
		t.Errorf("Status() = %q; want the deadlocks counted", sim.Status())
	}
	d, ok := sim.LastDeadlock()
	var de *locker.Error
	if !ok || !errors.As(d.Err, &de) || !errors.Is(d.Err, locker.ErrDeadlock) {
		t.Fatalf("LastDeadlock() = %+v, %v; want a *locker.Error", d, ok)
	}
	// The target: reported within 1s of the wait that closes the
	// cycle.
	if d.After > time.Second {
		t.Errorf("%s was told of the deadlock %s after it asked for %s; want at once", d.Owner, d.After, d.Key)
	}
	var cycle []string
	for _, step := range de.Cycle {
		cycle = append(cycle, step.Owner+" waits for "+step.Key)
	}
	want := map[string]string{"sync-eu": "inventory:us", "sync-us": "inventory:eu"}
	if de.Owner != d.Owner || want[d.Owner] != d.Key || len(de.Cycle) != 2 ||
		!slices.Contains(cycle, "sync-eu waits for inventory:us") || !slices.Contains(cycle, "sync-us waits for inventory:eu") {
		t.Errorf("%s, refused asking for %s, was told the cycle %q (owner %s); want the two syncers each waiting for the other's key",
			d.Owner, d.Key, cycle, de.Owner)
	}
	var owner string
	var keys []string
	testdb.Eventually(t, 30*time.Second, "a syncer holding both inventory keys after the other was told", func() bool {
		owner, keys = heldTogether(t, pool, "inventory:%")
		return owner != ""
	})
	if owner != "sync-eu" && owner != "sync-us" || len(keys) != 2 {
		t.Errorf("%s holds %v at once; want a syncer holding both inventory keys", owner, keys)
	}
}

// leftovers lists goroutines still running code of the sim or of a
// Keepalive or Notifier it started.
func leftovers() string {
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	var out []string
	for _, g := range strings.Split(string(buf), "\n\n") {
		if strings.Contains(g, "internal/demo.(*Sim)") || strings.Contains(g, "locker.(*Keepalive).run") ||
			strings.Contains(g, "locker.(*Notifier).Run") {
			out = append(out, g)
		}
	}
	return strings.Join(out, "\n\n")
}

func TestConfigRejectsBadValues(t *testing.T) {
	for _, cfg := range []demo.Config{
		{Workers: -1}, {Workers: demo.MaxWorkers + 1}, {HotKeys: -2}, {HotKeys: demo.MaxHotKeys + 1},
		{Speed: 0.01}, {Speed: 1000}, {Speed: -1},
	} {
		if err := cfg.Validate(); err == nil {
			t.Errorf("Validate(%+v) = nil, want an error", cfg)
		}
	}
	if err := (demo.Config{}).Validate(); err != nil {
		t.Errorf("zero Config: %v", err)
	}
}
