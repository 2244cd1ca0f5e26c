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
func ExampleLocker_Acquire_permits() {
	ctx := context.Background()
	pool := examplePool(ctx)
	defer pool.Close()

	lk, err := locker.New(locker.Config{TTL: time.Minute})
	if err != nil {
		panic(err)
	}
	licence := func(owner string, permits int) ([]locker.Lease, error) {
		return lk.Acquire(ctx, pool, locker.Request{
			Keys: []locker.Key{{Name: "licences:builder", Mode: locker.ModeSemaphore, Permits: permits}}, Owner: owner,
		})
	}
	first, err := licence("build-1", 2)
	if err != nil {
		panic(err)
	}
	second, err := licence("build-2", 2)
	if err != nil {
		panic(err)
	}
	fmt.Println(first[0].Mode, first[0].Permits, second[0].Token > first[0].Token)

	_, err = licence("build-3", 2)
	var held *locker.Error
	fmt.Println(errors.As(err, &held), held.Holders)
	_, err = licence("build-3", 3)
	fmt.Println(errors.As(err, &held) && held.Conflict, errors.Is(err, locker.ErrHeld))

	// A holder's lease is released by its token, as any lease; the other
	// holder keeps its own.
	if _, err := lk.Release(ctx, pool, first...); err != nil {
		panic(err)
	}
	third, err := licence("build-3", 2)
	fmt.Println(third[0].Owner, third[0].Token > second[0].Token, err)
	// Output:
	// semaphore 2 true
	// true 2
	// true true
	// build-3 true <nil>
}

// Readers share a key that a writer takes alone: any number of readers
// hold it at once, each with a lease of its own, while no writer does; a
// writer waits for the readers (and readers who come after a queued writer
// wait for it).
func ExampleLocker_Acquire_shared() {
	ctx := context.Background()
	pool := examplePool(ctx)
	defer pool.Close()

	lk, err := locker.New(locker.Config{TTL: time.Minute})
	if err != nil {
		panic(err)
	}
	read := func(owner string) ([]locker.Lease, error) {
		return lk.Acquire(ctx, pool, locker.Request{
			Keys: []locker.Key{{Name: "config", Mode: locker.ModeShared}}, Owner: owner,
		})
	}
	r1, err := read("reader-1")
	if err != nil {
		panic(err)
	}
	r2, err := read("reader-2")
	if err != nil {
		panic(err)
	}
	fmt.Println(r1[0].Mode, r2[0].Mode, r1[0].Token != r2[0].Token)

	_, err = lk.Acquire(ctx, pool, locker.Request{Keys: locker.Keys("config"), Owner: "writer"})
	fmt.Println("writer beside readers:", errors.Is(err, locker.ErrHeld))

	for _, r := range [][]locker.Lease{r1, r2} {
		if _, err := lk.Release(ctx, pool, r...); err != nil {
			panic(err)
		}
	}
	w, err := lk.Acquire(ctx, pool, locker.Request{Keys: locker.Keys("config"), Owner: "writer"})
	fmt.Println("writer once they are gone:", w[0].Mode, err)
	// Output:
	// shared shared true
	// writer beside readers: true
	// writer once they are gone: exclusive <nil>
}
