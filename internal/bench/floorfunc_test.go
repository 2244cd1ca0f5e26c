package bench

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/lockctl/lockctl/internal/testdb"
)

// The function floor keeps the contract it is the floor of: an attempt on
// a key whose grant another transaction has in flight is refused at once,
// without waiting for that transaction, and draws no token.
func TestFloorFunctionRefusesAGrantInFlightAtOnce(t *testing.T) {
	ctx := context.Background()
	tg, err := openTarget(ctx, testdb.DSN(t), 2)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tg.close(ctx) })
	f := floorFunc{pool: tg.pool, ttl: time.Minute}
	token, err := f.tryAcquire(ctx, "k", "a")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.release(ctx, "k", "a", token); err != nil {
		t.Fatal(err)
	}

	tx, err := tg.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, floorFuncTakeSQL, "k", "b", time.Minute.Microseconds()); err != nil {
		t.Fatal(err)
	}
	var before int64
	if err := tx.QueryRow(ctx, `SELECT last_value FROM distributed_lock_fence_seq`).Scan(&before); err != nil {
		t.Fatal(err)
	}

	actx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if _, err := f.tryAcquire(actx, "k", "c"); !errors.Is(err, errRefused) {
		t.Fatalf("an attempt beside a grant in flight: %v, want refused at once", err)
	}
	var after int64
	if err := tg.pool.QueryRow(ctx, `SELECT last_value FROM distributed_lock_fence_seq`).Scan(&after); err != nil {
		t.Fatal(err)
	}
	if after != before {
		t.Errorf("the refusal drew a token: the sequence moved from %d to %d", before, after)
	}
}

// The floor's table is stored as distributed_lock is, so that its updates
// stay HOT as the locker's do.
func TestFloorFunctionTableIsStoredAsTheLockTable(t *testing.T) {
	ctx := context.Background()
	tg, err := openTarget(ctx, testdb.DSN(t), 1)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tg.close(ctx) })
	var lockOpts, floorOpts []string
	const optsSQL = `SELECT coalesce(reloptions, '{}') FROM pg_class WHERE oid = $1::regclass`
	if err := tg.pool.QueryRow(ctx, optsSQL, "distributed_lock").Scan(&lockOpts); err != nil {
		t.Fatal(err)
	}
	if err := tg.pool.QueryRow(ctx, optsSQL, "bench_fn_lock").Scan(&floorOpts); err != nil {
		t.Fatal(err)
	}
	if len(lockOpts) == 0 || !slices.Equal(floorOpts, lockOpts) {
		t.Errorf("bench_fn_lock is stored with %v, distributed_lock with %v", floorOpts, lockOpts)
	}
}
