package store_test

import (
	"context"
	"errors"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/lockctl/lockctl/internal/testdb"
)

// A hand-off to a waiting set that cannot have every key yet holds on to
// nothing it locked for the check. Here the set waits for k1 and k2, both
// free, but another transaction has k2's row locked: the release of k1
// hands nothing over. Had it kept the set's record on k2 locked to the end
// of its transaction, a release of several keys (release_all) could wait
// there for one that waits for it: one transaction passing on k1 then k3,
// another k2 then k4, each holding the other's next head record
// (PostgreSQL's deadlock detector then fails one of them, 40P01).
func TestSetHandOffThatCannotGrantLetsGoOfWhatItLocked(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := testdb.New(t)
	const setup = `
INSERT INTO distributed_lock (lock_key, owner_id, fence_token, expires_at, ttl, acquired_at, released_at)
SELECT k, 'gone', nextval('distributed_lock_fence_seq'), now(), '1 minute', now(), now()
FROM unnest(ARRAY['k1', 'k2']) k;
WITH g AS (SELECT nextval(pg_get_serial_sequence('distributed_lock_waiter', 'waiter_id')) AS id)
INSERT INTO distributed_lock_waiter (lock_key, owner_id, waiting_since, seen_until, ttl, claim_window, group_id)
SELECT k, 'set', now(), now() + interval '1 minute', '1 minute', '2 seconds', g.id
FROM unnest(ARRAY['k1', 'k2']) k, g;`
	if _, err := pool.Exec(ctx, setup, pgx.QueryExecModeSimpleProtocol); err != nil {
		t.Fatal(err)
	}
	other, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = other.Rollback(ctx) }()
	if _, err := other.Exec(ctx, `SELECT 1 FROM distributed_lock WHERE lock_key = 'k2' FOR NO KEY UPDATE`); err != nil {
		t.Fatal(err)
	}
	releaser, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = releaser.Rollback(ctx) }()
	var handed *int64
	err = releaser.QueryRow(ctx, `
SELECT distributed_lock_hand_off('k1', clock_timestamp())
FROM distributed_lock WHERE lock_key = 'k1' FOR NO KEY UPDATE`).Scan(&handed)
	if err != nil || handed != nil {
		t.Fatalf("hand-off of k1 with k2 locked elsewhere: %v, %v; want nothing handed", handed, err)
	}
	// From a third connection: the set's record on k2 is not locked by the
	// releaser, which is still open.
	var id int64
	err = pool.QueryRow(ctx, `SELECT waiter_id FROM distributed_lock_waiter WHERE lock_key = 'k2' FOR UPDATE NOWAIT`).Scan(&id)
	if pgErr, ok := errors.AsType[*pgconn.PgError](err); ok && pgErr.Code == "55P03" {
		t.Fatal("the hand-off that granted nothing still holds the set's record on k2")
	}
	if err != nil {
		t.Fatal(err)
	}
}
