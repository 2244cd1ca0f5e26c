package locker_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/lockctl/lockctl/locker"
)

// Run a scheduled job once per period across a fleet: every node's timer
// calls this, and the first to take the key holds it at least the period,
// so a node whose timer fires a little later, after the job finished and
// released, is still refused.
func ExampleLocker_Acquire_atLeast() {
	ctx := context.Background()
	pool := examplePool(ctx)
	defer pool.Close()
	lk, err := locker.New(locker.Config{TTL: time.Minute})
	if err != nil {
		panic(err)
	}
	runOnce := func(node string) {
		leases, err := lk.Acquire(ctx, pool, locker.Request{
			Keys: locker.Keys("reports:hourly"), Owner: node, AtLeast: 50 * time.Minute,
		})
		if errors.Is(err, locker.ErrHeld) {
			fmt.Println(node, "skips: this period's report is done or running")
			return
		}
		if err != nil {
			panic(err)
		}
		fmt.Println(node, "writes the report")
		if _, err := lk.Release(ctx, pool, leases...); err != nil { // the key stays kept
			panic(err)
		}
	}
	runOnce("node-a")
	runOnce("node-b") // a second later, by its own timer
	// Output:
	// node-a writes the report
	// node-b skips: this period's report is done or running
}
