package bench

import (
	"context"
	"fmt"
	"runtime"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/lockctl/lockctl/locker"
	"github.com/lockctl/lockctl/store"
)

// KeepaliveResult is the client-side cost of keeping many locks alive.
type KeepaliveResult struct {
	Locks    int           `json:"locks"`
	TTL      time.Duration `json:"ttl_ns"`
	Measured time.Duration `json:"measured_ns"` // wall time of the measurement
	// CPU is this process's user+system time over Measured (getrusage), so
	// it includes the Go runtime (timers, GC) as well as pgx.
	CPU        time.Duration `json:"cpu_ns"`
	CPUPercent float64       `json:"cpu_percent"` // of one core
	Renewals   int64         `json:"renewals"`    // renewals the database recorded meanwhile
	Lost       int           `json:"lost"`        // keepalives that gave up their lease (should be 0)
}

const keepaliveOwner = "bench-keepalive"

// keepaliveRenewalsSQL counts the renewals the database recorded on the
// measurement's keys.
const keepaliveRenewalsSQL = `
SELECT coalesce(sum(renew_count), 0)::bigint FROM distributed_lock
WHERE owner_id = $1 AND released_at IS NULL`

// measureKeepalive holds n locks with one Locker.Keepalive each and measures
// the process's CPU time while they renew for d. Nothing else runs in the
// process meanwhile, so the CPU time is theirs.
func measureKeepalive(ctx context.Context, pool *pgxpool.Pool, n int, ttl, d time.Duration) (KeepaliveResult, error) {
	res := KeepaliveResult{Locks: n, TTL: ttl}
	lk, err := locker.New(locker.Config{TTL: ttl})
	if err != nil {
		return res, err
	}
	kas := make([]*locker.Keepalive, 0, n)
	defer func() {
		for _, k := range kas {
			k.Stop()
			_, _ = lk.Release(context.WithoutCancel(ctx), pool, k.Leases()[0])
		}
	}()
	for i := range n {
		lease, err := tryKey(ctx, lk, pool, fmt.Sprintf("keepalive-%05d", i), keepaliveOwner)
		if err != nil {
			return res, fmt.Errorf("bench: keepalive: %w", err)
		}
		kas = append(kas, lk.Keepalive(ctx, pool, lease))
	}
	var before int64
	if err := pool.QueryRow(ctx, keepaliveRenewalsSQL, keepaliveOwner).Scan(&before); err != nil {
		return res, fmt.Errorf("bench: keepalive: %w", store.Interpret(err))
	}
	runtime.GC() // the lock series' garbage is not the keepalives' cost
	cpu0, err := processCPU()
	if err != nil {
		return res, err
	}
	began := time.Now()
	select {
	case <-ctx.Done():
		return res, ctx.Err()
	case <-time.After(d):
	}
	cpu1, err := processCPU()
	if err != nil {
		return res, err
	}
	res.Measured = time.Since(began)
	res.CPU = cpu1 - cpu0
	res.CPUPercent = 100 * res.CPU.Seconds() / res.Measured.Seconds()
	for _, k := range kas {
		if context.Cause(k.Context()) != nil {
			res.Lost++
		}
	}
	var after int64
	if err := pool.QueryRow(ctx, keepaliveRenewalsSQL, keepaliveOwner).Scan(&after); err != nil {
		return res, fmt.Errorf("bench: keepalive: %w", store.Interpret(err))
	}
	res.Renewals = after - before
	return res, nil
}
