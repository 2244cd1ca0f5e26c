package locker_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/lockctl/lockctl/locker"
)

// Two licences of a build tool, as a semaphore of 2 permits: two builds
// hold one each, with a lease and a token of their own; a third is
// refused until one of them releases. The permits live on the key: asked
// with other permits while it has holders, it is a conflict.
func ExampleLocker_TryAcquirePermit() {
	ctx := context.Background()
	pool := examplePool(ctx)
	defer pool.Close()
	lk, err := locker.New(locker.Config{TTL: time.Minute})
	if err != nil {
		panic(err)
	}

	first, err := lk.TryAcquirePermit(ctx, pool, "licences:builder", "build-1", 2)
	if err != nil {
		panic(err)
	}
	second, err := lk.TryAcquirePermit(ctx, pool, "licences:builder", "build-2", 2)
	if err != nil {
		panic(err)
	}
	fmt.Println(first.Mode, first.Permits, second.Token > first.Token)

	_, err = lk.TryAcquirePermit(ctx, pool, "licences:builder", "build-3", 2)
	var held *locker.HeldError
	fmt.Println(errors.As(err, &held), held.Holders)

	_, err = lk.TryAcquirePermit(ctx, pool, "licences:builder", "build-3", 3)
	var conflict *locker.ConflictError
	fmt.Println(errors.As(err, &conflict), errors.Is(err, locker.ErrHeld))

	// A holder's lease is released by its token, as any lease; the other
	// holder keeps its own.
	if _, err := lk.Release(ctx, pool, first); err != nil {
		panic(err)
	}
	third, err := lk.TryAcquirePermit(ctx, pool, "licences:builder", "build-3", 2)
	fmt.Println(third.Owner, third.Token > second.Token, err)
	// Output:
	// semaphore 2 true
	// true 2
	// true true
	// build-3 true <nil>
}
