package store_test

import (
	"context"
	"errors"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/lockctl/lockctl/internal/testdb"
)

// A waiters' heartbeat locks its records in key order, as a release of
// several keys locks each key's head record in turn. Here a process waits
// on kb (the older record) and ka; another transaction holds the record on
// ka. The heartbeat waits there without having locked kb's record first:
// in id order it would hold kb's while waiting for ka's, and a release of
// ka then kb would wait for it in turn (a deadlock, 40P01).
func TestHeartbeatLocksRecordsInKeyOrder(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := testdb.New(t)
	var ids []int64
	for _, k := range []string{"kb", "ka"} {
		var id int64
		if err := pool.QueryRow(ctx, `INSERT INTO distributed_lock_waiter (lock_key, owner_id, waiting_since, seen_until, ttl, claim_window)
VALUES ($1, 'p', now(), now() + interval '1 minute', '1 minute', '2 seconds') RETURNING waiter_id`, k).Scan(&id); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	holder, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = holder.Rollback(ctx) }()
	if _, err := holder.Exec(ctx, `SELECT 1 FROM distributed_lock_waiter WHERE lock_key = 'ka' FOR UPDATE`); err != nil {
		t.Fatal(err)
	}
	done := testdb.ExecBlocked(t, pool, `SELECT distributed_lock_waiter_heartbeat($1, 60000000)`, ids)
	var id int64
	err = pool.QueryRow(ctx, `SELECT waiter_id FROM distributed_lock_waiter WHERE lock_key = 'kb' FOR UPDATE NOWAIT`).Scan(&id)
	if pgErr, ok := errors.AsType[*pgconn.PgError](err); ok && pgErr.Code == "55P03" {
		t.Error("the heartbeat holds the record on kb while it waits for the one on ka")
	} else if err != nil {
		t.Error(err)
	}
	if err := holder.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
