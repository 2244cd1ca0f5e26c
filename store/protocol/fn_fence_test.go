package protocol_test

import (
	"context"
	"errors"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
)

// fenceArgs are distributed_lock_fence's arguments but the key and token.
type fenceArgs struct {
	owner string
	token tok
}

const fenceSQL = `SELECT distributed_lock_fence(key => $1, owner => $2, token => $3) AS result`

func (a fenceArgs) call(key string, p prepared) (string, []any) {
	return fenceSQL, []any{key, a.owner, tokenArg(p, a.token)}
}

// A fence writes nothing, whatever it answers.
func TestFence(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "distributed_lock_fence")
	mine := fenceArgs{owner: me, token: keptToken}
	current := want{value: true, row: untouched}
	stale := want{value: false, row: untouched}
	f.run(t, []fnCase{
		{name: "no row", state: noRow(), call: mine.call, want: stale},
		{name: "free", state: free().with(func(r *lockRow) { r.owner = me }), call: mine.call, want: stale},
		{name: "held by the caller", state: heldBy(me), call: mine.call, want: current},
		{name: "held by the caller, an older token", state: heldBy(me), call: fenceArgs{owner: me, token: keptPrevious}.call, want: stale},
		{name: "held by another, its token", state: heldBy(other), call: mine.call, want: stale},
		{name: "held by the caller's owner, taken by another role", state: heldBy(me).ofAnotherRole(), call: mine.call,
			want: stale},
		{name: "expired, the caller's own", state: lapsed(me), call: mine.call, want: stale},
		{name: "held by the caller, queued", state: heldBy(me).queued(w1), call: mine.call, want: want{value: true, row: untouched, waiters: waiters(w1)}},
		{name: "promised to the caller, unclaimed", state: promisedTo(me), call: mine.call, want: current},
		{name: "lapsed hand-off to the caller", state: lapsedHandOffTo(me), call: mine.call, want: stale},
		{name: "a holder's slot, its token", state: sharedBy(other, me), call: fenceArgs{owner: me, token: slotTok(2)}.call, want: current},
		{name: "a holder's slot, another owner", state: sharedBy(other, me), call: fenceArgs{owner: me, token: slotTok(1)}.call, want: stale},
		{name: "a holder's slot, lapsed", state: sharedBy(other).holding(lapsedSlot(me)), call: fenceArgs{owner: me, token: slotTok(2)}.call,
			want: stale},
		{name: "the group's token", state: sharedBy(other), call: fenceArgs{owner: groupOwner, token: keptToken}.call, want: stale},
	})
}

// A holder's true fence keeps the group's row and its slot locked until the
// caller's transaction ends: neither an exclusive grant (which locks the
// row for update) nor a re-grant of the slot commits before the guarded
// writes.
func TestFenceOfAHolderHoldsItsGroupUntilTheTransactionEnds(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFixture(t, "distributed_lock_fence")
	key := t.Name()
	p := prepare(t, f.db, key, sharedBy(me))
	tx, err := f.db.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	var current bool
	if err := tx.QueryRow(ctx, fenceSQL, key, me, p.slots[0]).Scan(&current); err != nil || !current {
		t.Fatalf("fence: %v, %v; want true", current, err)
	}
	takeOvers := []string{
		`SELECT FROM distributed_lock WHERE lock_key = $1 AND slot = 0 FOR NO KEY UPDATE NOWAIT`,
		`SELECT FROM distributed_lock WHERE lock_key = $1 AND slot = 1 FOR NO KEY UPDATE NOWAIT`,
	}
	for _, sql := range takeOvers {
		var pgErr *pgconn.PgError
		if _, err := f.db.Exec(ctx, sql, key); !errors.As(err, &pgErr) || pgErr.Code != "55P03" {
			t.Fatalf("%s from another transaction: %v; want SQLSTATE 55P03", sql, err)
		}
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	for _, sql := range takeOvers {
		if _, err := f.db.Exec(ctx, sql, key); err != nil {
			t.Fatalf("%s after the fenced transaction committed: %v", sql, err)
		}
	}
}

// A true fence keeps the row locked until the caller's transaction ends: no
// take-over (which locks the row for update) can slip in before the
// guarded writes commit.
func TestFenceHoldsTheRowUntilTheTransactionEnds(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFixture(t, "distributed_lock_fence")
	key := t.Name()
	p := prepare(t, f.db, key, heldBy(me))
	tx, err := f.db.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	var current bool
	if err := tx.QueryRow(ctx, fenceSQL, key, me, p.token).Scan(&current); err != nil || !current {
		t.Fatalf("fence: %v, %v; want true", current, err)
	}
	takeOver := `SELECT FROM distributed_lock WHERE lock_key = $1 AND slot = 0 FOR NO KEY UPDATE NOWAIT`
	var pgErr *pgconn.PgError
	if _, err := f.db.Exec(ctx, takeOver, key); !errors.As(err, &pgErr) || pgErr.Code != "55P03" {
		t.Fatalf("locking the fenced row for update from another transaction: %v; want SQLSTATE 55P03", err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := f.db.Exec(ctx, takeOver, key); err != nil {
		t.Fatalf("after the fenced transaction committed: %v; want the row free to lock", err)
	}
}
