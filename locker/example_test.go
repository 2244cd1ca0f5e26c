package locker_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/lockctl/lockctl/internal/operator"
	"github.com/lockctl/lockctl/internal/testdb"
	"github.com/lockctl/lockctl/locker"
)

// examplePool opens a pool on a fresh, migrated lockctl schema. In a
// service this is pgxpool.New(ctx, os.Getenv("DATABASE_URL")) followed by
// locker.Migrate (see ExampleMigrate).
func examplePool(ctx context.Context) *pgxpool.Pool {
	return openExamplePool(ctx, testdb.ExampleDSN())
}

func openExamplePool(ctx context.Context, dsn string) *pgxpool.Pool {
	pool, err := pgxpool.New(ctx, dsn)
	if err != nil {
		panic(err)
	}
	// Connect now: a lease's trust window starts before its statement waits
	// for a connection.
	if err := pool.Ping(ctx); err != nil {
		panic(err)
	}
	return pool
}

// The guarded resource of the examples: a report row that only the lock's
// holder may write.
const (
	exampleReportTableSQL = `CREATE TABLE report (id int PRIMARY KEY, body text NOT NULL, fence_token bigint NOT NULL)`
	exampleReportWriteSQL = `
INSERT INTO report (id, body, fence_token) VALUES (1, $1, $2)
ON CONFLICT (id) DO UPDATE SET body = excluded.body, fence_token = excluded.fence_token`
	exampleInvoiceTableSQL = `CREATE TABLE invoice_run (month text PRIMARY KEY, started_by text NOT NULL)`
	exampleInvoiceSQL      = `INSERT INTO invoice_run (month, started_by) VALUES ($1, $2)`
)

// Create the lock tables at start-up: Migrate applies the schema embedded
// in this package and is idempotent, so every instance of a service may run
// it (or run `lockctl migrate` once instead).
func ExampleMigrate() {
	ctx := context.Background()
	pool := openExamplePool(ctx, testdb.ExampleEmptyDSN()) // a database without the tables
	defer pool.Close()

	lk, err := locker.New(locker.Config{})
	if err != nil {
		panic(err)
	}
	nightly := locker.Request{Keys: locker.Keys("reports:nightly"), Owner: "worker-1"}
	_, err = lk.Acquire(ctx, pool, nightly)
	fmt.Println("before:", errors.Is(err, locker.ErrNotMigrated))

	for range 2 { // a second run changes nothing
		if err := locker.Migrate(ctx, pool); err != nil {
			panic(err)
		}
	}
	leases, err := lk.Acquire(ctx, pool, nightly)
	fmt.Println("after:", leases[0].Outcome, err)
	// Output:
	// before: true
	// after: acquired <nil>
}

// Wait for a lock another owner holds. With a Notifier, the waiter wakes
// when the holder releases, not only at the holder's expiry.
func ExampleLocker_Acquire_wait() {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pool := examplePool(ctx)
	defer pool.Close()

	notifier := locker.NewNotifier(locker.NotifierConfig{Connect: func(ctx context.Context) (*pgx.Conn, error) {
		return pgx.ConnectConfig(ctx, pool.Config().ConnConfig)
	}})
	go notifier.Run(ctx)
	lk, err := locker.New(locker.Config{TTL: time.Minute, Notifier: notifier})
	if err != nil {
		panic(err)
	}
	held, err := lk.Acquire(ctx, pool, locker.Request{Keys: locker.Keys("compaction"), Owner: "worker-1"})
	if err != nil {
		panic(err)
	}

	got := make(chan locker.Lease)
	go func() {
		// Bound the wait, as a service should.
		leases, err := lk.Acquire(ctx, pool, locker.Request{
			Keys: locker.Keys("compaction"), Owner: "worker-2", Wait: 30 * time.Second,
		})
		if err != nil {
			panic(err)
		}
		got <- leases[0]
	}()

	// worker-1 finishes its work (here: at once) and releases. worker-2,
	// queued by then or about to queue, gets the key now rather than at the
	// end of worker-1's minute-long lease.
	if _, err := lk.Release(ctx, pool, held...); err != nil {
		panic(err)
	}
	lease := <-got
	fmt.Println("worker-2:", lease.Outcome, "with a larger token:", lease.Token > held[0].Token)

	// If worker-2 was queued, the release handed it the lease in the
	// release's own transaction. A handed lease first runs for the claim
	// window (Config.ClaimWindow); the Locker claims it (renews it to the
	// TTL) in the background unless worker-2 releases it first.
	fmt.Println("valid now:", lease.ValidFor() > 0)
	// Output:
	// worker-2: acquired with a larger token: true
	// valid now: true
}

// Take a lock, find it held by someone else, give it back.
func Example() {
	ctx := context.Background()
	pool := examplePool(ctx)
	defer pool.Close()

	lk, err := locker.New(locker.Config{TTL: 30 * time.Second})
	if err != nil {
		panic(err)
	}
	try := func(owner string) ([]locker.Lease, error) {
		// No Wait: one attempt.
		return lk.Acquire(ctx, pool, locker.Request{Keys: locker.Keys("reports:nightly"), Owner: owner})
	}
	lease, err := try("worker-1")
	if err != nil {
		panic(err)
	}
	fmt.Println("worker-1:", lease[0].Outcome)

	_, err = try("worker-2")
	var held *locker.Error
	if errors.As(err, &held) && errors.Is(err, locker.ErrHeld) {
		fmt.Println("worker-2: held by", held.Owner)
	}

	if _, err := lk.Release(ctx, pool, lease...); err != nil {
		panic(err)
	}
	again, err := try("worker-2")
	if err != nil {
		panic(err)
	}
	fmt.Println("worker-2:", again[0].Outcome, "with a larger token:", again[0].Token > lease[0].Token)

	// Releasing a lease you no longer hold is reported, and changes nothing.
	_, err = lk.Release(ctx, pool, lease...)
	fmt.Println("worker-1 releases again:", errors.Is(err, locker.ErrNotHeld))
	// Output:
	// worker-1: acquired
	// worker-2: held by worker-1
	// worker-2: acquired with a larger token: true
	// worker-1 releases again: true
}

// Keep a lease for as long as the work takes, and stop the work when the
// lease can no longer be trusted.
func ExampleLocker_Keepalive() {
	ctx := context.Background()
	pool := examplePool(ctx)
	defer pool.Close()

	lk, err := locker.New(locker.Config{TTL: 500 * time.Millisecond})
	if err != nil {
		panic(err)
	}
	leases, err := lk.Acquire(ctx, pool, locker.Request{Keys: locker.Keys("compaction"), Owner: locker.NewOwnerID()})
	if err != nil {
		panic(err)
	}
	k := lk.Keepalive(ctx, pool, leases...)

	// The work runs under k.Context(); here it takes two TTLs.
	select {
	case <-k.Context().Done():
		fmt.Println("lease lost:", context.Cause(k.Context()))
	case <-time.After(time.Second):
		fmt.Println("still held after 2 TTLs:", context.Cause(k.Context()) == nil)
	}
	k.Stop()
	_, err = lk.Release(ctx, pool, k.Leases()...)
	fmt.Println("released:", err == nil)

	// An operator force-expiring the lease ends the holder's context.
	leases, _ = lk.Acquire(ctx, pool, locker.Request{Keys: locker.Keys("compaction"), Owner: "worker-1"})
	k = lk.Keepalive(ctx, pool, leases...)
	defer k.Stop()
	if _, err := (operator.Operator{}).ForceExpire(ctx, pool, "compaction", leases[0].Token); err != nil {
		panic(err)
	}
	<-k.Context().Done()
	fmt.Println("after a force-expire:", errors.Is(context.Cause(k.Context()), locker.ErrLeaseLost))
	// Output:
	// still held after 2 TTLs: true
	// released: true
	// after a force-expire: true
}

// Write under a lock in the same database: Fence in the writing transaction
// makes the write commit only while the lease holds.
func ExampleFence() {
	ctx := context.Background()
	pool := examplePool(ctx)
	defer pool.Close()
	if _, err := pool.Exec(ctx, exampleReportTableSQL); err != nil {
		panic(err)
	}

	lk, err := locker.New(locker.Config{TTL: time.Minute})
	if err != nil {
		panic(err)
	}
	leases, err := lk.Acquire(ctx, pool, locker.Request{Keys: locker.Keys("report:1"), Owner: "worker-1"})
	if err != nil {
		panic(err)
	}
	lease := leases[0]
	write := func(lease locker.Lease, body string) error {
		return pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
			if err := locker.Fence(ctx, tx, lease); err != nil {
				return err // rolls back
			}
			_, err := tx.Exec(ctx, exampleReportWriteSQL, body, lease.Token)
			return err
		})
	}
	fmt.Println("holder writes:", write(lease, "v1") == nil)

	// The lease is lost (here an operator expires it, and worker-2 takes
	// the key); worker-1 does not know yet and tries to write again.
	if _, err := (operator.Operator{}).ForceExpire(ctx, pool, "report:1", lease.Token); err != nil {
		panic(err)
	}
	leases, err = lk.Acquire(ctx, pool, locker.Request{Keys: locker.Keys("report:1"), Owner: "worker-2"})
	if err != nil {
		panic(err)
	}
	next := leases[0]
	fmt.Println("worker-2:", next.Outcome)
	err = write(lease, "stale")
	fmt.Println("stale write refused:", errors.Is(err, locker.ErrNotHeld))
	fmt.Println("new holder writes:", write(next, "v2") == nil)
	// Output:
	// holder writes: true
	// worker-2: stolen
	// stale write refused: true
	// new holder writes: true
}

// Take a lock inside your own transaction: it commits or rolls back with
// your work, and a refusal does not spoil the transaction.
func ExampleLocker_Acquire_inTransaction() {
	ctx := context.Background()
	pool := examplePool(ctx)
	defer pool.Close()
	if _, err := pool.Exec(ctx, exampleInvoiceTableSQL); err != nil {
		panic(err)
	}
	lk, err := locker.New(locker.Config{TTL: time.Minute})
	if err != nil {
		panic(err)
	}

	run := func(owner string) error {
		return pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
			leases, err := lk.Acquire(ctx, tx, locker.Request{Keys: locker.Keys("invoices:2026-06"), Owner: owner})
			if err != nil {
				return err
			}
			_, err = tx.Exec(ctx, exampleInvoiceSQL, "2026-06", leases[0].Owner)
			return err
		})
	}
	fmt.Println("billing-1:", run("billing-1"))
	err = run("billing-2")
	fmt.Println("billing-2 held out:", errors.Is(err, locker.ErrHeld))
	// Output:
	// billing-1: <nil>
	// billing-2 held out: true
}
