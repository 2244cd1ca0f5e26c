package locker_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/lockctl/lockctl/locker"
)

// A transfer between two accounts takes both account keys at once: all or
// none, so it never holds one while waiting for the other, and two
// transfers naming the accounts in opposite orders never deadlock. One
// Keepalive keeps both leases; one Release gives both back.
func ExampleLocker_Acquire_severalKeys() {
	ctx := context.Background()
	pool := examplePool(ctx)
	defer pool.Close()

	lk, err := locker.New(locker.Config{TTL: time.Minute})
	if err != nil {
		panic(err)
	}
	leases, err := lk.Acquire(ctx, pool, locker.Request{
		Keys: locker.Keys("account:42", "account:7"), Owner: "transfer-1", Wait: 10 * time.Second,
	})
	if err != nil {
		panic(err)
	}
	ka := lk.Keepalive(ctx, pool, leases...)
	fmt.Println(leases[0].Key, leases[1].Key, leases[0].Owner)

	// Another transfer on one of the same accounts is refused, and takes
	// nothing: not even the account that was free.
	_, err = lk.Acquire(ctx, pool, locker.Request{Keys: locker.Keys("account:9", "account:7"), Owner: "transfer-2"})
	var held *locker.Error
	fmt.Println(errors.As(err, &held), held.Key)
	_, err = lk.Acquire(ctx, pool, locker.Request{Keys: locker.Keys("account:9"), Owner: "someone"})
	fmt.Println(err == nil)

	ka.Stop()
	if _, err := lk.Release(ctx, pool, ka.Leases()...); err != nil {
		panic(err)
	}
	// Output:
	// account:42 account:7 transfer-1
	// true account:7
	// true
}
