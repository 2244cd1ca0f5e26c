package locker_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/lockctl/lockctl/internal/testdb"
	"github.com/lockctl/lockctl/locker"
)

// Two licences of a build tool, as a semaphore of 2 permits: two builds
// hold one each, with a lease and a token of their own; a third is
// refused until one of them releases. The permits live on the key: asked
// with other permits while it has holders, it is a conflict.
func ExampleLocker_Acquire_permits() {
	ctx := context.Background()
	pool := examplePool(ctx)
	defer pool.Close()
	lk, err := locker.New(locker.Config{TTL: time.Minute})
	if err != nil {
		panic(err)
	}

	first, err := testdb.One(lk.Acquire(ctx, pool, locker.Request{Keys: []locker.Key{{Name: "licences:builder", Mode: locker.ModeSemaphore, Permits: 2}}, Owner: "build-1"}))
	if err != nil {
		panic(err)
	}
	second, err := testdb.One(lk.Acquire(ctx, pool, locker.Request{Keys: []locker.Key{{Name: "licences:builder", Mode: locker.ModeSemaphore, Permits: 2}}, Owner: "build-2"}))
	if err != nil {
		panic(err)
	}
	fmt.Println(first.Mode, first.Permits, second.Token > first.Token)

	_, err = testdb.One(lk.Acquire(ctx, pool, locker.Request{Keys: []locker.Key{{Name: "licences:builder", Mode: locker.ModeSemaphore, Permits: 2}}, Owner: "build-3"}))
	var held *locker.Error
	fmt.Println(errors.As(err, &held), held.Holders)

	_, err = testdb.One(lk.Acquire(ctx, pool, locker.Request{Keys: []locker.Key{{Name: "licences:builder", Mode: locker.ModeSemaphore, Permits: 3}}, Owner: "build-3"}))
	var conflict *locker.Error
	fmt.Println(errors.As(err, &conflict) && conflict.Conflict, errors.Is(err, locker.ErrHeld))

	// A holder's lease is released by its token, as any lease; the other
	// holder keeps its own.
	if _, err := testdb.One(lk.Release(ctx, pool, first)); err != nil {
		panic(err)
	}
	third, err := testdb.One(lk.Acquire(ctx, pool, locker.Request{Keys: []locker.Key{{Name: "licences:builder", Mode: locker.ModeSemaphore, Permits: 2}}, Owner: "build-3"}))
	fmt.Println(third.Owner, third.Token > second.Token, err)
	// Output:
	// semaphore 2 true
	// true 2
	// true true
	// build-3 true <nil>
}
