package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/lockctl/lockctl/internal/testdb"
	"github.com/lockctl/lockctl/store"
)

func TestStandalone(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := testdb.New(t)
	if !store.Standalone(pool) {
		t.Error("a pool: want standalone")
	}
	conn, err := pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	if !store.Standalone(conn) || !store.Standalone(conn.Conn()) {
		t.Error("an idle connection: want standalone")
	}
	// A transaction begun by hand, not through pgx.Tx: only the server's
	// transaction status tells.
	if _, err := conn.Exec(ctx, "BEGIN"); err != nil {
		t.Fatal(err)
	}
	if store.Standalone(conn) || store.Standalone(conn.Conn()) {
		t.Error("a connection inside BEGIN: want not standalone")
	}
	if _, err := conn.Exec(ctx, "COMMIT"); err != nil {
		t.Fatal(err)
	}
	tx, err := conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	if store.Standalone(tx) {
		t.Error("a pgx.Tx: want not standalone")
	}
}

// A lazy release turns synchronous_commit off for its own transaction only;
// inside a caller's transaction Release never asks for it, so the caller's
// commit stays as durable as the caller made it.
func TestLazyReleaseDurability(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.New(t)
	grant := func(key string) store.LeaseRef {
		g, ok, err := store.TryGrant(ctx, db, store.GrantParams{Key: key, Owner: "o", TTL: time.Minute, Actor: "o"})
		if err != nil || !ok {
			t.Fatalf("grant %s: %v, %v", key, ok, err)
		}
		return store.LeaseRef{Key: key, Owner: "o", Token: g.Token}
	}
	setting := func(tx pgx.Tx) string {
		var s string
		if err := tx.QueryRow(ctx, "SHOW synchronous_commit").Scan(&s); err != nil {
			t.Fatal(err)
		}
		return s
	}

	for _, name := range []string{"plain", "logged"} {
		for _, lazy := range []bool{true, false} {
			ref := grant(name)
			tx, err := db.Begin(ctx)
			if err != nil {
				t.Fatal(err)
			}
			rows, err := tx.Query(ctx, store.ReleaseSQL, ref.Key, ref.Owner, ref.Token, lazy, name == "logged", "actor")
			if err != nil {
				t.Fatal(err)
			}
			rows.Close()
			want := map[bool]string{true: "off", false: "on"}[lazy]
			if got := setting(tx); got != want {
				t.Errorf("%s statement, lazy %v: synchronous_commit %s; want %s", name, lazy, got, want)
			}
			if err := tx.Commit(ctx); err != nil {
				t.Fatal(err)
			}
		}
	}

	ref := grant("in-tx")
	tx, err := db.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	if _, ok, err := store.Release(ctx, tx, store.ReleaseParams{LeaseRef: ref, Lazy: true}); err != nil || !ok {
		t.Fatalf("release in a transaction: %v, %v", ok, err)
	}
	if got := setting(tx); got != "on" {
		t.Errorf("after a lazy Release inside the caller's transaction, synchronous_commit %s; want on", got)
	}
}
