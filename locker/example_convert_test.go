package locker_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/lockctl/lockctl/locker"
)

// A writer that has finished writing lets readers in without letting
// another writer between: Downgrade makes its exclusive lease a shared
// one, with a larger token. A reader that must write again upgrades: at
// once while it reads alone, else it waits for the other readers (here, a
// try refused while another reader holds the key).
func ExampleLocker_Downgrade() {
	ctx := context.Background()
	pool := examplePool(ctx)
	defer pool.Close()

	lk, err := locker.New(locker.Config{TTL: time.Minute})
	if err != nil {
		panic(err)
	}
	leases, err := lk.Acquire(ctx, pool, locker.Request{Keys: locker.Keys("catalog"), Owner: "indexer"})
	if err != nil {
		panic(err)
	}
	written := leases[0]
	reading, err := lk.Downgrade(ctx, pool, written)
	if err != nil {
		panic(err)
	}
	fmt.Println(reading.Mode, reading.Token > written.Token)

	other, err := lk.Acquire(ctx, pool, locker.Request{
		Keys: []locker.Key{{Name: "catalog", Mode: locker.ModeShared}}, Owner: "reporter",
	})
	if err != nil {
		panic(err)
	}
	_, err = lk.Upgrade(ctx, pool, reading, 0)
	fmt.Println(errors.Is(err, locker.ErrHeld))

	if _, err := lk.Release(ctx, pool, other...); err != nil {
		panic(err)
	}
	writing, err := lk.Upgrade(ctx, pool, reading, time.Second)
	fmt.Println(writing.Owner, writing.Token > other[0].Token, err)
	// Output:
	// shared true
	// true
	// indexer true <nil>
}
