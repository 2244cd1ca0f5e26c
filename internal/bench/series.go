package bench

import (
	"context"
	"errors"
	"strconv"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/lockctl/lockctl/locker"
)

// Series names, as reported.
const (
	SeriesReference       = "reference"        // the ported transaction-per-acquire design
	SeriesReferenceInline = "reference-inline" // the same, token drawn inside the write (one round trip fewer)
	SeriesLocker          = "locker"           // locker.Acquire (no wait) + locker.Release, default Config
	SeriesLockerDurable   = "locker-durable"   // the same with Config.DurableRelease
	SeriesLockerLogged    = "locker-logged"    // the same with Config.LogGrants
	SeriesStatements      = "statements"       // the locker's protocol as client statements, without the functions (statements.go)
	SeriesUpsert          = "upsert"           // the keep-row upsert of the peers (upsert.go)
	SeriesFloorFunction   = "floor-function"   // a SECURITY DEFINER function doing only the UPDATE, with SKIP LOCKED and the epoch draw the contract needs (floorfunc.go)
	SeriesCommitFloor     = "floor-commit"     // one single-row UPDATE (one commit) per round trip
	SeriesNetFloor        = "floor-select"     // SELECT 1: one round trip, no commit
)

// checked is whether a series' grants go through the correctness checker.
func checked(series string) bool {
	switch series {
	case SeriesCommitFloor, SeriesNetFloor:
		return false
	}
	return true
}

// Scenario names, as reported.
const (
	ScenarioSolo = "no contention" // one key per worker
	ScenarioHot  = "hot keys"      // every worker on the same few keys
)

// cycleFunc runs one cycle for worker (an acquire and, when granted, a
// release; for a floor, one statement). granted is false when the lock was
// held by another worker.
type cycleFunc func(ctx context.Context, worker int, key string) (granted bool, err error)

// series is one measured thing.
type series struct {
	name  string
	cycle cycleFunc
}

func owner(worker int) string { return "bench-worker-" + strconv.Itoa(worker) }

func lockerSeries(name string, lk *locker.Locker, pool *pgxpool.Pool, chk *checker) series {
	return series{name: name, cycle: func(ctx context.Context, worker int, key string) (bool, error) {
		o := owner(worker)
		lease, err := tryKey(ctx, lk, pool, key, o)
		if errors.Is(err, locker.ErrHeld) {
			return false, nil
		}
		if err != nil {
			return false, err
		}
		chk.granted(key, o, lease.Token)
		chk.releasing(key, o)
		if _, err := lk.Release(ctx, pool, lease); err != nil {
			if errors.Is(err, locker.ErrNotHeld) {
				chk.releaseLost()
				return true, nil
			}
			return true, err
		}
		return true, nil
	}}
}

// tokenLock is a design whose release names the grant's token too: the
// statements and the function floor.
type tokenLock interface {
	tryAcquire(ctx context.Context, key, owner string) (token int64, err error) // errRefused when held
	release(ctx context.Context, key, owner string, token int64) (released bool, err error)
}

func tokenLockSeries(name string, s tokenLock, chk *checker) series {
	return series{name: name, cycle: func(ctx context.Context, worker int, key string) (bool, error) {
		o := owner(worker)
		token, err := s.tryAcquire(ctx, key, o)
		if errors.Is(err, errRefused) {
			return false, nil
		}
		if err != nil {
			return false, err
		}
		chk.granted(key, o, token)
		chk.releasing(key, o)
		released, err := s.release(ctx, key, o, token)
		if err == nil && !released {
			chk.releaseLost()
		}
		return true, err
	}}
}

// ownerLock is a design whose release names the key and owner only: the
// reference and the upsert.
type ownerLock interface {
	tryAcquire(ctx context.Context, key, owner string) (token int64, err error) // errRefused when held
	release(ctx context.Context, key, owner string) (found bool, err error)
}

func ownerLockSeries(name string, lk ownerLock, chk *checker) series {
	return series{name: name, cycle: func(ctx context.Context, worker int, key string) (bool, error) {
		o := owner(worker)
		token, err := lk.tryAcquire(ctx, key, o)
		if errors.Is(err, errRefused) {
			return false, nil
		}
		if err != nil {
			return false, err
		}
		chk.granted(key, o, token)
		chk.releasing(key, o)
		found, err := lk.release(ctx, key, o)
		if err == nil && !found {
			chk.releaseLost()
		}
		return true, err
	}}
}

// floorUpdateSQL is the least a durable write can cost: one row, one
// commit, one round trip. A lock cycle needs two writes (grant, release).
const floorUpdateSQL = `UPDATE bench_floor SET n = n + 1 WHERE id = $1`

func commitFloorSeries(pool *pgxpool.Pool) series {
	return series{name: SeriesCommitFloor, cycle: func(ctx context.Context, worker int, _ string) (bool, error) {
		_, err := pool.Exec(ctx, floorUpdateSQL, worker)
		return true, err
	}}
}

// floorSelectSQL is one round trip that does nothing.
const floorSelectSQL = `SELECT 1`

func netFloorSeries(pool *pgxpool.Pool) series {
	return series{name: SeriesNetFloor, cycle: func(ctx context.Context, _ int, _ string) (bool, error) {
		var one int
		return true, pool.QueryRow(ctx, floorSelectSQL).Scan(&one)
	}}
}
