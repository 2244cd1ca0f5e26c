package bench

import (
	"context"
	"strconv"

	"github.com/jackc/pgx/v5"

	"github.com/lockctl/lockctl/locker"
)

// waiterKey is the key waiter i of job's process takes: the job's key, but
// in the mutex keys series one of Permits keys, chosen by the waiter's
// index over all processes, so the keys share the waiters evenly whatever
// the spread.
func waiterKey(job queueJob, i int) string {
	if job.Series != SemaphoreMutexKeys {
		return job.Key
	}
	return job.Key + "/" + strconv.Itoa((job.FirstWaiter+i)%job.Permits)
}

// permitWaiters wait for a permit of the job's one semaphore key
// (a waiting locker.Acquire of a permit), sharing a pool and a Notifier per process as the
// mutex keys' waiters do, so the two series differ only in the lock.
func permitWaiters(ctx context.Context, side, counted *pgx.ConnConfig, job queueJob) ([]acquireFunc, func(), error) {
	lk, pool, cleanup, err := openWaitersLocker(ctx, side, counted, job)
	if err != nil {
		return nil, nil, err
	}
	return leaseAcquirers(job, "permit", lk, pool, func(ctx context.Context, _ int, owner string) (locker.Lease, error) {
		return waitPermit(ctx, lk, pool, job.Key, owner, job.Permits)
	}), cleanup, nil
}

// mutexKeysWaiters wait in the fair queue (locker.Acquire) of their own
// key among Permits mutex keys.
func mutexKeysWaiters(ctx context.Context, side, counted *pgx.ConnConfig, job queueJob) ([]acquireFunc, func(), error) {
	lk, pool, cleanup, err := openWaitersLocker(ctx, side, counted, job)
	if err != nil {
		return nil, nil, err
	}
	return leaseAcquirers(job, "mutex", lk, pool, func(ctx context.Context, i int, owner string) (locker.Lease, error) {
		return waitKey(ctx, lk, pool, waiterKey(job, i), owner)
	}), cleanup, nil
}
