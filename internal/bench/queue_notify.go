package bench

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/lockctl/lockctl/store"
)

// The notification floor: one connection (in the first process) commits a
// one-row UPDATE and a NOTIFY on a channel nobody listens on, then holds,
// again and again, while every process keeps one connection LISTENing on a
// channel of its own, as a process's Notifier does. On PostgreSQL 15 a
// NOTIFY signals every backend of the database that listens, whatever its
// channel, and each reads the queue in a transaction of its own: the
// commit's backend transactions are 1 plus the listeners.

// notifyFloorSQL is the commit: the UPDATE and the NOTIFY, one statement,
// one transaction.
const notifyFloorSQL = `
WITH u AS (UPDATE bench_floor SET n = n + 1 WHERE id = $1 RETURNING n)
SELECT pg_notify($2, n::text) FROM u`

// notifyFloorChannel is the channel nobody listens on.
const notifyFloorChannel = "lockctl_bench_unheard"

// listenerLinger keeps the listeners connected a while after the stop, so
// the last commits' signals still find them.
const listenerLinger = 100 * time.Millisecond

// notifyFloorWaiters opens this process's listener (on side, so the
// LISTEN counts as setup) and, in the first process, the committer, the one
// "waiter" of the series.
func notifyFloorWaiters(ctx context.Context, side, counted *pgx.ConnConfig, job queueJob) ([]acquireFunc, func(), error) {
	listener, err := pgx.ConnectConfig(ctx, side)
	if err != nil {
		return nil, nil, fmt.Errorf("connect: %w", store.Interpret(err))
	}
	channel := pgx.Identifier{"lockctl_bench_listen_" + strconv.Itoa(job.Process)}.Sanitize()
	if _, err := listener.Exec(ctx, "LISTEN "+channel); err != nil {
		listener.Close(ctx)
		return nil, nil, fmt.Errorf("listen: %w", store.Interpret(err))
	}
	// The listener only has to be there, idle, as a Notifier between its
	// heartbeats: its backend reads the queue whether the client reads or not.
	cleanup := func() {
		time.Sleep(time.Until(job.Stop.Add(listenerLinger)))
		listener.Close(context.WithoutCancel(ctx))
	}
	if job.Waiters == 0 {
		return nil, cleanup, nil
	}
	conn, err := pgx.ConnectConfig(ctx, counted)
	if err != nil {
		cleanup()
		return nil, nil, fmt.Errorf("connect: %w", store.Interpret(err))
	}
	closeAll := func() {
		conn.Close(context.WithoutCancel(ctx))
		cleanup()
	}
	if _, err := conn.Exec(ctx, floorRowSQL, job.AdvisoryKey); err != nil {
		closeAll()
		return nil, nil, fmt.Errorf("floor row: %w", store.Interpret(err))
	}
	acquire := func(ctx context.Context) (int64, func() error, error) {
		if _, err := conn.Exec(ctx, notifyFloorSQL, job.AdvisoryKey, notifyFloorChannel); err != nil {
			return 0, nil, err
		}
		return 0, func() error { return nil }, nil
	}
	return []acquireFunc{acquire}, closeAll, nil
}
