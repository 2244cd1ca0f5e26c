package deployment_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/lockctl/lockctl/internal/pgtemp"
	"github.com/lockctl/lockctl/internal/testdb"
	"github.com/lockctl/lockctl/locker"
	"github.com/lockctl/lockctl/store"
)

// These tests fail a primary over to a real standby (internal/pgtemp): the
// standby misses the last WAL (its sender paused), the primary crashes as a
// power cut would, the standby is promoted, and what the promoted server
// does is checked against what the old one acknowledged.

// promotionsEnv sets how many promotions TestTokensRiseAcrossPromotions
// makes (default 3, 1 with -short). The 20-promotion run:
//
//	LOCKCTL_FAILOVER_PROMOTIONS=20 go test -count=1 -run TestTokensRiseAcrossPromotions ./internal/deployment/
const promotionsEnv = "LOCKCTL_FAILOVER_PROMOTIONS"

// epochShift is where a token's epoch starts (schema.sql,
// distributed_lock_advance_epoch).
const epochShift = 40

// serverPool opens a pool on one server, closed when the test ends.
func serverPool(t *testing.T, in *pgtemp.Instance) *pgxpool.Pool {
	t.Helper()
	return testdb.Pool(t, in.DSN(""))
}

func failoverLocker(t *testing.T) *locker.Locker {
	return testdb.Locker(t, locker.Config{TTL: time.Hour})
}

// crashAndPromote crashes primary and promotes standby, returning the new
// primary's timeline.
func crashAndPromote(t *testing.T, primary, standby *pgtemp.Instance) uint32 {
	t.Helper()
	ctx := context.Background()
	if err := primary.Crash(); err != nil {
		t.Fatal(err)
	}
	if err := standby.Promote(ctx); err != nil {
		t.Fatal(err)
	}
	tl, err := standby.Timeline(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return tl
}

// Every token the promoted standby grants is larger than every token the
// old primary acknowledged, including the grants the standby never
// received, over a chain of promotions: each round's standby is copied
// from the previous round's promoted server, so timelines rise round by
// round, and each grant's epoch is its server's timeline.
func TestTokensRiseAcrossPromotions(t *testing.T) {
	promotions := 3
	if testing.Short() {
		promotions = 1
	}
	if v := os.Getenv(promotionsEnv); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			t.Fatalf("%s=%q: want a positive number", promotionsEnv, v)
		}
		promotions = n
	}
	ctx := context.Background()
	lk := failoverLocker(t)
	primary := testdb.Server(t)
	if err := locker.Migrate(ctx, serverPool(t, primary)); err != nil {
		t.Fatal(err)
	}
	var maxAcked int64
	for round := range promotions {
		start := time.Now()
		standby := testdb.Standby(t, primary)
		db := serverPool(t, primary)
		// A few grants the standby receives, then a burst it misses.
		for i := range 3 {
			lease := grant(t, lk, db, fmt.Sprintf("seen-%d-%d", round, i))
			maxAcked = max(maxAcked, lease.Token)
			if _, err := testdb.One(lk.Release(ctx, db, lease)); err != nil {
				t.Fatal(err)
			}
		}
		if err := pgtemp.WaitReplayed(ctx, primary, standby); err != nil {
			t.Fatal(err)
		}
		if err := standby.PauseWALSender(ctx); err != nil {
			t.Fatal(err)
		}
		const burst = 40
		for i := range burst {
			lease := grant(t, lk, db, fmt.Sprintf("missed-%d-%d", round, i%8))
			maxAcked = max(maxAcked, lease.Token)
			if _, err := testdb.One(lk.Release(ctx, db, lease)); err != nil {
				t.Fatal(err)
			}
		}
		db.Close()
		tl := crashAndPromote(t, primary, standby)

		promoted := serverPool(t, standby)
		var missed int
		if err := promoted.QueryRow(ctx, `SELECT count(*) FROM distributed_lock WHERE lock_key LIKE $1`,
			fmt.Sprintf("missed-%d-%%", round)).Scan(&missed); err != nil {
			t.Fatal(err)
		}
		if missed == 8 {
			t.Fatalf("round %d: the standby has every key of the burst; the WAL sender was not paused", round)
		}
		// Keys the old primary granted and the standby never saw, and keys
		// it saw: every new grant is above every acknowledged token.
		for _, key := range []string{fmt.Sprintf("missed-%d-0", round), fmt.Sprintf("seen-%d-0", round), "new"} {
			lease, err := testdb.Try(ctx, lk, promoted, key, fmt.Sprintf("after-%d", round))
			if err != nil {
				t.Fatalf("round %d: grant %s on the promoted server: %v", round, key, err)
			}
			if lease.Token <= maxAcked || lease.Token>>epochShift != int64(tl) {
				t.Fatalf("round %d: %s got token %d (epoch %d) on timeline %d; want above %d, the largest acknowledged, in epoch %d",
					round, key, lease.Token, lease.Token>>epochShift, tl, maxAcked, tl)
			}
			maxAcked = lease.Token
			if _, err := testdb.One(lk.Release(ctx, promoted, lease)); err != nil {
				t.Fatal(err)
			}
		}
		promoted.Close()
		t.Logf("promotion %d: timeline %d, %d of 8 burst keys reached the standby, next token %d, %s",
			round+1, tl, missed, maxAcked, time.Since(start).Round(time.Millisecond))
		if err := primary.Close(); err != nil {
			t.Fatal(err)
		}
		primary = standby
	}
}

// grant takes key for a fresh owner or fails the test.
func grant(t *testing.T, lk *locker.Locker, db locker.DBTX, key string) locker.Lease {
	t.Helper()
	return testdb.MustAcquire(t, lk, db, key, "owner-of-"+key)
}

// With a synchronous standby, every release the primary acknowledged is
// on the standby when it is promoted: no lease comes back for its TTL.
// Releases use the default (lazy) commit: the function decides at run time
// that a server with synchronous standbys must wait for one.
func TestSyncStandbyKeepsAcknowledgedReleases(t *testing.T) {
	ctx := context.Background()
	lk := failoverLocker(t)
	primary := testdb.Server(t)
	db := serverPool(t, primary)
	if err := locker.Migrate(ctx, db); err != nil {
		t.Fatal(err)
	}
	standby := testdb.Standby(t, primary)
	if err := standby.SetSynchronous(ctx, true); err != nil {
		t.Fatal(err)
	}
	const keys = 50
	for i := range keys {
		lease := grant(t, lk, db, fmt.Sprintf("k%d", i))
		if _, err := testdb.One(lk.Release(ctx, db, lease)); err != nil {
			t.Fatal(err)
		}
	}
	db.Close()
	crashAndPromote(t, primary, standby)
	promoted := serverPool(t, standby)
	var held []string
	rows, err := promoted.Query(ctx, `SELECT lock_key FROM distributed_lock WHERE released_at IS NULL ORDER BY lock_key`)
	if err != nil {
		t.Fatal(err)
	}
	if held, err = pgx.CollectRows(rows, pgx.RowTo[string]); err != nil {
		t.Fatal(err)
	}
	var all int
	if err := promoted.QueryRow(ctx, `SELECT count(*) FROM distributed_lock`).Scan(&all); err != nil {
		t.Fatal(err)
	}
	if all != keys || len(held) != 0 {
		t.Fatalf("after promotion: %d of %d keys granted, still held (acknowledged releases lost): %v", all, keys, held)
	}
}

// A pool on a multi-host DSN (target_session_attrs=read-write) follows the
// promotion: once the old primary is gone, the next calls reach the
// promoted standby, where the lease replicated before the crash can still
// be renewed and released, and a new grant gets a larger token.
func TestClientsFollowThePromotion(t *testing.T) {
	ctx := context.Background()
	lk := failoverLocker(t)
	primary := testdb.Server(t)
	standby := testdb.Standby(t, primary)
	db := testdb.Pool(t, pgtemp.MultiHostDSN("", primary, standby))
	if err := locker.Migrate(ctx, db); err != nil {
		t.Fatal(err)
	}
	lease := grant(t, lk, db, "job")
	if port := serverPort(t, db); port != primary.Port() {
		t.Fatalf("connected to port %d before the promotion; want the primary's %d", port, primary.Port())
	}
	if err := pgtemp.WaitReplayed(ctx, primary, standby); err != nil {
		t.Fatal(err)
	}
	crashAndPromote(t, primary, standby)

	// The pool's connections to the crashed primary fail once each; a
	// client retries a call that failed as unavailable.
	var renewed locker.Lease
	var err error
	if !testdb.Within(10*time.Second, func() bool {
		renewed, err = testdb.One(lk.Renew(ctx, db, lease))
		return !errors.Is(err, locker.ErrUnavailable)
	}) || err != nil {
		t.Fatalf("renew after the promotion: %v", err)
	}
	if renewed.Token != lease.Token {
		t.Fatalf("renewed token %d; want the lease's %d", renewed.Token, lease.Token)
	}
	if port := serverPort(t, db); port != standby.Port() {
		t.Fatalf("connected to port %d after the promotion; want the promoted standby's %d", port, standby.Port())
	}
	if _, err := testdb.One(lk.Release(ctx, db, renewed)); err != nil {
		t.Fatal(err)
	}
	next := grant(t, lk, db, "job")
	if next.Token <= lease.Token {
		t.Fatalf("token after the promotion %d; want above %d", next.Token, lease.Token)
	}
}

// serverPort is the port of the server a pooled connection reaches.
func serverPort(t *testing.T, db *pgxpool.Pool) int {
	t.Helper()
	var port int
	var err error
	if !testdb.Within(10*time.Second, func() bool {
		err = store.Interpret(db.QueryRow(context.Background(), `SELECT inet_server_port()`).Scan(&port))
		return !errors.Is(err, locker.ErrUnavailable)
	}) || err != nil {
		t.Fatalf("read the server's port: %v", err)
	}
	return port
}
