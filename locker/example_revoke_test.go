package locker_test

import (
	"context"
	"fmt"
	"time"

	"github.com/lockctl/lockctl/locker"
)

// An operator asks the holder to let go (`lockctl revoke`, the console's v,
// or distributed_lock_revoke from any client): the holder's Keepalive
// learns it at its next renewal, with who asked and why, finishes its
// write and releases cleanly instead of being forced.
func ExampleKeepalive_Revoked() {
	ctx := context.Background()
	pool := examplePool(ctx)
	defer pool.Close()
	lk, err := locker.New(locker.Config{TTL: 3 * time.Second})
	if err != nil {
		panic(err)
	}
	leases, err := lk.Acquire(ctx, pool, locker.Request{Keys: locker.Keys("reindex:catalog"), Owner: "indexer-1"})
	if err != nil {
		panic(err)
	}
	ka := lk.Keepalive(ctx, pool, leases...)
	// The operator's side, here through SQL as a client in any language would.
	if _, err := pool.Exec(ctx, `SELECT distributed_lock_revoke($1, $2, event_actor => 'alice@ops', reason => 'host drain')`,
		"reindex:catalog", leases[0].Token); err != nil {
		panic(err)
	}
	select {
	case revoked := <-ka.Revoked():
		fmt.Printf("asked to let go by %s: %s\n", revoked.RevokedByActor, revoked.RevokeReason)
	case <-ka.Context().Done():
		panic(context.Cause(ka.Context()))
	}
	ka.Stop()
	if _, err := lk.Release(ctx, pool, ka.Leases()...); err != nil {
		panic(err)
	}
	fmt.Println("released")
	// Output:
	// asked to let go by alice@ops: host drain
	// released
}
