package locker_test

import (
	"context"
	"fmt"
	"time"

	"github.com/lockctl/lockctl/internal/testdb"
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
	var kept []*locker.Keepalive
	for _, shard := range []string{"shard:1", "shard:2", "shard:3"} {
		lease, err := testdb.Try(ctx, lk, pool, shard, "worker-7")
		if err != nil {
			panic(err)
		}
		kept = append(kept, sess.Keepalive(ctx, lease)) // bound: the session keeps it
	}
	// ... work under each kept[i].Context() ...
	if err := sess.Close(ctx); err != nil { // releases the three shards
		panic(err)
	}
	fmt.Println(kept[0].Context().Err() != nil)
	_, err = testdb.Try(ctx, lk, pool, "shard:2", "worker-8")
	fmt.Println(err == nil)
	// Output:
	// true
	// true
}
