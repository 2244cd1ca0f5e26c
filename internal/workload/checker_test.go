package workload_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/lockctl/lockctl/internal/testdb"
	"github.com/lockctl/lockctl/internal/workload"
	"github.com/lockctl/lockctl/locker"
)

// TestCheckerCatchesNaiveUpsert proves the checker can fail: the common
// "upsert" lock draws its token in VALUES, before it waits for the row, and
// deletes the row on release. Under contention a grant then takes a token
// drawn before a newer grant and release on the key, so tokens go backwards
// (about 1% of acquisitions at 8 workers on 4 hot keys). The run repeats
// on fresh schemas until the checker reports it, for at most 20s.
func TestCheckerCatchesNaiveUpsert(t *testing.T) {
	t.Parallel()
	deadline := time.Now().Add(20 * time.Second)
	var grants, backwards int
	for run := 1; ; run++ {
		pool := testdb.New(t)
		real, err := locker.New(locker.Config{TTL: 100 * time.Millisecond, LogGrants: true})
		if err != nil {
			t.Fatal(err)
		}
		naive := &naiveLocker{real: real, ttl: 100 * time.Millisecond}
		res := workload.Workload{Workers: 8, HotKeys: 4, Duration: 1500 * time.Millisecond, TTL: 100 * time.Millisecond,
			Client: naive, HoldWrites: 1}.Run(t, pool)
		grants += res.Report.Stats.Grants
		for _, v := range res.Report.Violations {
			if strings.HasPrefix(v, "token went backwards") {
				backwards++
			}
		}
		if backwards > 0 {
			t.Logf("run %d: %d of %d grants (%.2f%%) got a token smaller than an earlier grant's; %d violations in the last run, e.g. %s",
				run, backwards, grants, 100*float64(backwards)/float64(grants), len(res.Report.Violations), res.Report.Violations[0])
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the checker found no token going backwards in %d runs (%d grants) of the naive upsert", run, grants)
		}
	}
}

// TestCheckerCatchesUnfencedWrites proves the fencing checks can fail:
// holders that skip locker.Fence keep writing after a pause let their lease
// be stolen, and the checker must see an older token's write committed after
// a newer one's (or after the newer grant).
func TestCheckerCatchesUnfencedWrites(t *testing.T) {
	t.Parallel()
	deadline := time.Now().Add(20 * time.Second)
	for run := 1; ; run++ {
		pool := testdb.New(t)
		res := workload.Workload{Workers: 8, HotKeys: 4, Duration: 1500 * time.Millisecond, TTL: 100 * time.Millisecond,
			SkipFence: true, PauseOneIn: 4, HoldWrites: 3}.Run(t, pool)
		stale := 0
		for _, v := range res.Report.Violations {
			if strings.HasPrefix(v, "stale write") {
				stale++
			}
		}
		if stale > 0 {
			t.Logf("run %d: %d stale writes among %d writes, e.g. %s", run, stale, res.Report.Stats.FencedWrites, res.Report.Violations[0])
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the checker found no stale write in %d runs of unfenced writers", run)
		}
	}
}

// TestCheckerCatchesUnfencedPermitHolders proves the fencing checks hold
// for the leases of a semaphore's holders too: every hold is on a mode
// key, and holders of the semaphore's 2 permits that skip locker.Fence
// keep writing after a pause let their permit be taken over; the checker
// must see a write on the semaphore key committed after the grant that
// fenced its lease off. The run repeats on fresh schemas until it does,
// for at most 20s.
func TestCheckerCatchesUnfencedPermitHolders(t *testing.T) {
	t.Parallel()
	deadline := time.Now().Add(20 * time.Second)
	for run := 1; ; run++ {
		pool := testdb.New(t)
		res := workload.Workload{Workers: 8, HotKeys: 1, Duration: 1500 * time.Millisecond, TTL: 100 * time.Millisecond,
			SkipFence: true, PauseOneIn: 4, HoldWrites: 3, ModeOneIn: 1, Permits: 2}.Run(t, pool)
		for _, v := range res.Report.Violations {
			if strings.HasPrefix(v, `stale write on "sem-0"`) {
				t.Logf("run %d: %d permits granted, %d violations, e.g. %s", run, res.Report.Stats.PermitGrants, len(res.Report.Violations), v)
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the checker found no stale write of a permit holder in %d runs of unfenced writers", run)
		}
	}
}

// TestCheckerCatchesSplitSets proves the set check can fail: a multi-key
// acquire that takes its keys one TryAcquire at a time (giving back what it
// took when a key is refused) grants each key in a transaction of its own,
// and holds one alone meanwhile; the checker must report a partial grant.
func TestCheckerCatchesSplitSets(t *testing.T) {
	t.Parallel()
	pool := testdb.New(t)
	lk, err := locker.New(locker.Config{TTL: 100 * time.Millisecond, LogGrants: true})
	if err != nil {
		t.Fatal(err)
	}
	res := workload.Workload{Workers: 8, HotKeys: 4, ColdKeys: 8, Duration: 1500 * time.Millisecond, TTL: 100 * time.Millisecond,
		Client: splitSets{lk}, SetOneIn: 2, HoldWrites: 1}.Run(t, pool)
	for _, v := range res.Report.Violations {
		if strings.HasPrefix(v, "partial grant of a set") {
			t.Logf("%d sets granted, %d violations, e.g. %s", res.Report.Stats.SetGrants, len(res.Report.Violations), v)
			return
		}
	}
	t.Fatalf("the checker found no partial grant among %d sets taken one key at a time (%d violations: %q)",
		res.Report.Stats.SetGrants, len(res.Report.Violations), res.Report.Violations)
}

// TestCheckerCatchesIgnoredLockDelay proves the lock-delay check can fail:
// the naive upsert lock knows nothing of lock-delays, so when a lease that
// asked for one expires (its holder paused past its TTL), the next grant
// takes the key at once; the checker must report a grant inside the delay.
// The run repeats on fresh schemas until it does, for at most 20s.
func TestCheckerCatchesIgnoredLockDelay(t *testing.T) {
	t.Parallel()
	deadline := time.Now().Add(20 * time.Second)
	for run := 1; ; run++ {
		pool := testdb.New(t)
		real, err := locker.New(locker.Config{TTL: 100 * time.Millisecond, LogGrants: true})
		if err != nil {
			t.Fatal(err)
		}
		res := workload.Workload{Workers: 8, HotKeys: 4, Duration: 1500 * time.Millisecond, TTL: 100 * time.Millisecond,
			Client: &naiveLocker{real: real, ttl: 100 * time.Millisecond}, LockDelay: 300 * time.Millisecond,
			PauseOneIn: 4, HoldWrites: 1}.Run(t, pool)
		for _, v := range res.Report.Violations {
			if strings.HasPrefix(v, "grant inside a lock-delay") {
				t.Logf("run %d: %d violations, e.g. %s", run, len(res.Report.Violations), v)
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the checker found no grant inside a lock-delay in %d runs of a client that ignores them", run)
		}
	}
}

// splitSets is the broken multi-key acquire: one key at a time.
type splitSets struct{ *locker.Locker }

func (s splitSets) Acquire(ctx context.Context, db locker.DBTX, req locker.Request) ([]locker.Lease, error) {
	var leases []locker.Lease
	for _, k := range req.Keys {
		one := req
		one.Keys = []locker.Key{k}
		lease, err := s.Locker.Acquire(ctx, db, one)
		if err != nil {
			for _, l := range leases {
				_, _ = s.Release(ctx, db, l)
			}
			return nil, err
		}
		leases = append(leases, lease...)
	}
	return leases, nil
}

func (s splitSets) Release(ctx context.Context, db locker.DBTX, leases ...locker.Lease) ([]locker.Lease, error) {
	var first error
	var released []locker.Lease
	for _, l := range leases {
		r, err := s.Locker.Release(ctx, db, l)
		if err != nil && first == nil {
			first = err
		}
		released = append(released, r...)
	}
	return released, first
}

// naiveLocker is the broken acquire the checker must catch: one upsert whose
// token comes from VALUES, release by DELETE. Renew is the real one.
type naiveLocker struct {
	real *locker.Locker
	ttl  time.Duration
}

const naiveGrantSQL = `
WITH granted AS (
    INSERT INTO distributed_lock AS l (lock_key, owner_id, fence_token, expires_at, ttl, acquired_at)
    VALUES ($1, $2, nextval('distributed_lock_fence_seq'),
            clock_timestamp() + $3::bigint * interval '1 microsecond',
            $3::bigint * interval '1 microsecond', clock_timestamp())
    ON CONFLICT (lock_key, slot) DO UPDATE SET
        owner_id = excluded.owner_id,
        fence_token = CASE WHEN l.owner_id = excluded.owner_id AND l.expires_at > excluded.acquired_at
                           THEN l.fence_token ELSE excluded.fence_token END,
        renew_count = CASE WHEN l.owner_id = excluded.owner_id AND l.expires_at > excluded.acquired_at
                           THEN l.renew_count + 1 ELSE 0 END,
        grant_kind = CASE WHEN l.owner_id = excluded.owner_id THEN 'acquired' ELSE 'stolen' END,
        previous_owner = l.owner_id, previous_token = l.fence_token,
        expires_at = excluded.expires_at, acquired_at = excluded.acquired_at
    WHERE l.owner_id = excluded.owner_id OR l.expires_at <= clock_timestamp()
    RETURNING l.*
), logged AS (
    INSERT INTO distributed_lock_event (occurred_at, lock_key, kind, owner_id, fence_token, actor, previous_owner, previous_token)
    SELECT clock_timestamp(), g.lock_key, g.grant_kind, g.owner_id, g.fence_token, g.owner_id, g.previous_owner, g.previous_token
    FROM granted g WHERE g.renew_count = 0
)
SELECT g.fence_token, g.expires_at, g.ttl,
       CASE WHEN g.renew_count > 0 THEN 'renewed' ELSE g.grant_kind END
FROM granted g`

const naiveReleaseSQL = `
WITH gone AS (
    DELETE FROM distributed_lock l WHERE l.lock_key = $1 AND l.owner_id = $2 AND l.fence_token = $3
    RETURNING l.lock_key, l.owner_id, l.fence_token
)
INSERT INTO distributed_lock_event (occurred_at, lock_key, kind, owner_id, fence_token, actor)
SELECT clock_timestamp(), g.lock_key, 'released', g.owner_id, g.fence_token, g.owner_id FROM gone g`

func (n *naiveLocker) Acquire(ctx context.Context, db locker.DBTX, req locker.Request) ([]locker.Lease, error) {
	key := req.Keys[0].Name
	for {
		lease, err := n.try(ctx, db, key, req.Owner)
		if !errors.Is(err, locker.ErrHeld) || req.Wait == 0 {
			if err != nil {
				return nil, err
			}
			return []locker.Lease{lease}, nil
		}
		select {
		case <-ctx.Done():
			return nil, &locker.Error{Kind: locker.ErrHeld, Key: key, Err: ctx.Err()}
		case <-time.After(time.Duration(2+rand.IntN(10)) * time.Millisecond):
		}
	}
}

func (n *naiveLocker) try(ctx context.Context, db locker.DBTX, key, owner string) (locker.Lease, error) {
	lease := locker.Lease{Key: key, Owner: owner}
	var outcome string
	err := db.QueryRow(ctx, naiveGrantSQL, key, owner, n.ttl.Microseconds()).
		Scan(&lease.Token, &lease.ExpiresAt, &lease.TTL, &outcome)
	if errors.Is(err, pgx.ErrNoRows) {
		return locker.Lease{}, &locker.Error{Kind: locker.ErrHeld, Key: key}
	}
	lease.Outcome = locker.Outcome(outcome)
	return lease, err
}

func (n *naiveLocker) Renew(ctx context.Context, db locker.DBTX, leases ...locker.Lease) ([]locker.Lease, error) {
	return n.real.Renew(ctx, db, leases...)
}

func (n *naiveLocker) Release(ctx context.Context, db locker.DBTX, leases ...locker.Lease) ([]locker.Lease, error) {
	lease := leases[0]
	tag, err := db.Exec(ctx, naiveReleaseSQL, lease.Key, lease.Owner, lease.Token)
	if err != nil {
		return nil, err
	}
	if tag.RowsAffected() == 0 {
		return nil, &locker.Error{Kind: locker.ErrNotHeld, Key: lease.Key, Owner: lease.Owner, Token: lease.Token}
	}
	return leases, nil
}
