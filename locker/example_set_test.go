package locker_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/lockctl/lockctl/internal/testdb"
	"github.com/lockctl/lockctl/locker"
)

// A transfer between two accounts takes both account keys at once: all or
// none, so it never holds one while waiting for the other, and two
// transfers naming the accounts in opposite orders never deadlock.
// KeepaliveAll keeps both leases; ReleaseAll gives both back.
func ExampleLocker_Acquire_severalKeys() {
	ctx := context.Background()
	pool := examplePool(ctx)
	defer pool.Close()
	lk, err := locker.New(locker.Config{TTL: time.Minute})
	if err != nil {
		panic(err)
	}

	leases, err := lk.Acquire(ctx, pool, locker.Request{Keys: locker.Keys([]string{"account:42", "account:7"}...), Owner: "transfer-1", Wait: locker.WaitForever})
	if err != nil {
		panic(err)
	}
	ka := lk.Keepalive(ctx, pool, leases...)
	fmt.Println(leases[0].Key, leases[1].Key, leases[0].Owner)

	// Another transfer on one of the same accounts is refused, and takes
	// nothing: not even the account that was free.
	_, err = lk.Acquire(ctx, pool, locker.Request{Keys: locker.Keys([]string{"account:9", "account:7"}...), Owner: "transfer-2"})
	var held *locker.Error
	fmt.Println(errors.As(err, &held), held.Key)
	_, err = testdb.Try(ctx, lk, pool, "account:9", "someone")
	fmt.Println(err == nil)

	ka.Stop()
	if err := testdb.ErrOf(lk.Release(ctx, pool, ka.Leases()...)); err != nil {
		panic(err)
	}
	// Output:
	// account:42 account:7 transfer-1
	// true account:7
	// true
}
