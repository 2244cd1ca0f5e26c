package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/lockctl/lockctl/internal/lockdb"
	"github.com/lockctl/lockctl/internal/testdb"
	"github.com/lockctl/lockctl/store"
)

// epochShift is where the epoch starts in a token (schema.sql,
// distributed_lock_advance_epoch).
const epochShift = 40

// timelineSQL reads the server's WAL timeline as the schema does.
const timelineSQL = `SELECT ('x' || substr(pg_walfile_name(pg_current_wal_lsn()), 1, 8))::bit(32)::bigint`

// grantToken grants key to a new owner and returns its token.
func grantToken(t *testing.T, db *pgxpool.Pool, key string) int64 {
	t.Helper()
	g, _, err := store.TryGrant(context.Background(), db, store.GrantParams{Key: key, Owner: "o", TTL: time.Minute, Actor: "o"})
	if err != nil || !g.Granted() {
		t.Fatalf("grant %s: %+v, %v", key, g, err)
	}
	return g.Token
}

// Migrating a database whose tokens are not in an epoch yet (its epoch row
// as migration 1 writes it) moves its sequence into the epoch of the
// server's timeline at once: every later token is above every earlier one,
// held leases keep theirs, and migrating again moves nothing.
func TestMigrateMovesTokensIntoTheEpoch(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.New(t)
	if _, err := db.Exec(ctx, keptRowSQL); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(ctx, `UPDATE distributed_lock_epoch SET system_id = NULL, timeline = 0, base = 0`); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(ctx, `SELECT setval('distributed_lock_fence_seq', 500)`); err != nil {
		t.Fatal(err)
	}
	if err := store.Migrate(ctx, db); err != nil {
		t.Fatal(err)
	}
	var timeline int64
	if err := db.QueryRow(ctx, timelineSQL).Scan(&timeline); err != nil {
		t.Fatal(err)
	}
	first := grantToken(t, db, "after-migrate")
	if first <= 500 || first>>epochShift != timeline {
		t.Fatalf("first token after migrate = %d (epoch %d); want above 500 in epoch %d", first, first>>epochShift, timeline)
	}
	if l, found, err := store.Get[lockdb.LockInfo](ctx, db, "kept"); err != nil || !found || l.Token != 7 {
		t.Fatalf("held lease after migrate = %+v, %v, %v; want its token 7 kept", l, found, err)
	}
	if err := store.Migrate(ctx, db); err != nil {
		t.Fatal(err)
	}
	if next := grantToken(t, db, "after-second-migrate"); next != first+1 {
		t.Errorf("token after migrating again = %d; want %d (no move)", next, first+1)
	}
}

// A database restored from another cluster's dump carries that cluster's
// epoch row and sequence. Its timelines start again at 1, so the first
// grant rebases the epoch above the dumped one instead of trusting the
// lower timeline: tokens keep rising.
func TestRestoreFromAnotherClusterKeepsTokensRising(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.New(t)
	// What a dump made on timeline 5 of another cluster restores.
	const dumped = 5<<epochShift + 1234
	if _, err := db.Exec(ctx, `UPDATE distributed_lock_epoch SET system_id = system_id + 1, timeline = 5, base = 0`); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(ctx, `SELECT setval('distributed_lock_fence_seq', $1)`, dumped); err != nil {
		t.Fatal(err)
	}
	var timeline int64
	if err := db.QueryRow(ctx, timelineSQL).Scan(&timeline); err != nil {
		t.Fatal(err)
	}
	token := grantToken(t, db, "after-restore")
	if token <= dumped || token>>epochShift != 5+timeline {
		t.Fatalf("first token after the restore = %d (epoch %d); want above %d in epoch %d",
			token, token>>epochShift, int64(dumped), 5+timeline)
	}
	if next := grantToken(t, db, "next"); next != token+1 {
		t.Errorf("second token = %d; want %d (the epoch moves once)", next, token+1)
	}
}
