package locker_test

import (
	"context"
	"fmt"
	"time"

	"github.com/lockctl/lockctl/locker"
)

// A worker that holds many keys keeps them all with one session: one
// heartbeat per interval however many leases are bound to it, and if the
// process dies they all lapse together at the session's TTL. Close releases
// what is still bound and deletes the session.
func ExampleLocker_OpenSession() {
	ctx := context.Background()
	pool := examplePool(ctx)
	defer pool.Close()

	lk, err := locker.New(locker.Config{TTL: time.Minute})
	if err != nil {
		panic(err)
	}
	sess, err := lk.OpenSession(ctx, pool, "worker-7")
	if err != nil {
		panic(err)
	}
	leases, err := lk.Acquire(ctx, pool, locker.Request{
		Keys: locker.Keys("shard:1", "shard:2", "shard:3"), Owner: "worker-7",
	})
	if err != nil {
		panic(err)
	}
	kept := sess.Keepalive(ctx, leases...) // bound: the session keeps them
	// ... work under kept.Context() ...

	if err := sess.Close(ctx); err != nil { // releases the three shards
		panic(err)
	}
	fmt.Println(kept.Context().Err() != nil)
	_, err = lk.Acquire(ctx, pool, locker.Request{Keys: locker.Keys("shard:2"), Owner: "worker-8"})
	fmt.Println(err == nil)
	// Output:
	// true
	// true
}
