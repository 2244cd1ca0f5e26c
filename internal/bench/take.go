package bench

import (
	"context"

	"github.com/lockctl/lockctl/locker"
)

// tryKey is one attempt at key for owner.
func tryKey(ctx context.Context, lk *locker.Locker, db locker.DBTX, key, owner string) (locker.Lease, error) {
	return oneLease(lk.Acquire(ctx, db, locker.Request{Keys: locker.Keys(key), Owner: owner}))
}

// waitKey takes key for owner, waiting in its queue as long as ctx lasts.
func waitKey(ctx context.Context, lk *locker.Locker, db locker.DBTX, key, owner string) (locker.Lease, error) {
	return oneLease(lk.Acquire(ctx, db, locker.Request{Keys: locker.Keys(key), Owner: owner, Wait: locker.WaitForever}))
}

// waitPermit takes one of permits permits of key for owner, waiting as
// long as ctx lasts.
func waitPermit(ctx context.Context, lk *locker.Locker, db locker.DBTX, key, owner string, permits int) (locker.Lease, error) {
	return oneLease(lk.Acquire(ctx, db, locker.Request{
		Keys: []locker.Key{{Name: key, Mode: locker.ModeSemaphore, Permits: permits}}, Owner: owner, Wait: locker.WaitForever}))
}

// oneLease is the lease of a call on one key.
func oneLease(leases []locker.Lease, err error) (locker.Lease, error) {
	if err != nil {
		return locker.Lease{}, err
	}
	return leases[0], nil
}
