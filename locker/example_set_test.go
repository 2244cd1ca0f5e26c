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
// transfers naming the accounts in opposite orders never deadlock.
// KeepaliveAll keeps both leases; ReleaseAll gives both back.
func ExampleLocker_AcquireAll() {
	ctx := context.Background()
	pool := examplePool(ctx)
	defer pool.Close()
	lk, err := locker.New(locker.Config{TTL: time.Minute})
	if err != nil {
		panic(err)
	}

	leases, err := lk.AcquireAll(ctx, pool, []string{"account:42", "account:7"}, "transfer-1")
	if err != nil {
		panic(err)
	}
	ka := lk.KeepaliveAll(ctx, pool, leases)
	fmt.Println(leases[0].Key, leases[1].Key, leases[0].Owner)

	// Another transfer on one of the same accounts is refused, and takes
	// nothing: not even the account that was free.
	_, err = lk.TryAcquireAll(ctx, pool, []string{"account:9", "account:7"}, "transfer-2")
	var held *locker.HeldError
	fmt.Println(errors.As(err, &held), held.Key)
	_, err = lk.TryAcquire(ctx, pool, "account:9", "someone")
	fmt.Println(err == nil)

	ka.Stop()
	if err := lk.ReleaseAll(ctx, pool, ka.Leases()); err != nil {
		panic(err)
	}
	// Output:
	// account:42 account:7 transfer-1
	// true account:7
	// true
}
