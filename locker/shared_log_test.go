package locker_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/lockctl/lockctl/internal/operator"
	"github.com/lockctl/lockctl/internal/testdb"
	"github.com/lockctl/lockctl/locker"
)

// keyEventsSQL is a key's event log in event_id order: on one key, the
// order its leases began and ended.
const keyEventsSQL = `
SELECT kind, owner_id, occurred_at FROM distributed_lock_event
WHERE lock_key = $1 AND kind IN ('acquired', 'stolen', 'released', 'force_released', 'force_expired')
ORDER BY event_id`

// When the end of the last reader's lease — its release, or an operator's
// force — hands the key to a writer queued for it, the log must record the
// reader's end before the writer's grant: read in event_id order, it
// otherwise shows the writer granted the key while the reader still held
// it.
func TestLastReadersEndIsLoggedBeforeTheHandOff(t *testing.T) {
	t.Parallel()
	for _, end := range []string{"released", "force_released", "force_expired"} {
		t.Run(end, func(t *testing.T) {
			t.Parallel()
			db := testdb.New(t)
			ctx := context.Background()
			lk := testdb.Locker(t, locker.Config{TTL: time.Minute, WaitRecheck: time.Second, LogGrants: true})
			r, err := testdb.One(lk.Acquire(ctx, db, locker.Request{Keys: []locker.Key{{Name: "cfg", Mode: locker.ModeShared}}, Owner: "reader"}))
			if err != nil {
				t.Fatal(err)
			}
			got := make(chan error, 1)
			go func() {
				wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
				defer cancel()
				_, err := testdb.Wait(wctx, lk, db, "cfg", "writer")
				got <- err
			}()
			if !testdb.Within(10*time.Second, func() bool {
				var n int
				_ = db.QueryRow(ctx, `SELECT count(*) FROM distributed_lock_waiter WHERE lock_key = 'cfg'`).Scan(&n)
				return n == 1
			}) {
				t.Fatal("the writer never queued")
			}
			switch end {
			case "released":
				_, err = testdb.One(lk.Release(ctx, db, r))
			case "force_released":
				_, err = (operator.Operator{}).ForceRelease(ctx, db, "cfg", r.Token)
			default:
				_, err = (operator.Operator{}).ForceExpire(ctx, db, "cfg", r.Token)
			}
			if err != nil {
				t.Fatal(err)
			}
			select {
			case err := <-got:
				if err != nil {
					t.Fatalf("the writer's wait: %v", err)
				}
			case <-time.After(20 * time.Second):
				t.Fatal("the writer was not granted the key after the reader's lease ended")
			}
			rows, err := db.Query(ctx, keyEventsSQL, "cfg")
			if err != nil {
				t.Fatal(err)
			}
			var log, at []string
			var kind, owner string
			var occurred time.Time
			if _, err := pgx.ForEachRow(rows, []any{&kind, &owner, &occurred}, func() error {
				log = append(log, kind+" "+owner)
				at = append(at, occurred.Format("15:04:05.000000"))
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			want := []string{"acquired reader", end + " reader", "acquired writer"}
			if !slices.Equal(log, want) {
				t.Fatalf("the key's log in event_id order: %q (occurred at %q); want %q", log, at, want)
			}
		})
	}
}

// A reader's lease that ran out unreleased is over once a writer has
// taken the key after it: a reader who takes the key again once the
// writer released it takes a free key, "acquired", and the log names no
// lease it took over. (The reader's old slot still holds its lapsed
// lease, unreleased, so it must not count as one to steal from.)
func TestReaderAfterAWriterDoesNotStealALapsedReadersSlot(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	clock := testdb.Clock(t, db)
	ctx := context.Background()
	short := testdb.Locker(t, locker.Config{TTL: 200 * time.Millisecond, LogGrants: true})
	lk := testdb.Locker(t, locker.Config{TTL: time.Minute, LogGrants: true})
	lapsed, err := testdb.One(short.Acquire(ctx, db, locker.Request{Keys: []locker.Key{{Name: "cfg", Mode: locker.ModeShared}}, Owner: "lapsed"}))
	if err != nil {
		t.Fatal(err)
	}
	clock.Advance(300 * time.Millisecond) // the reader's lease runs out
	w, err := testdb.Try(ctx, lk, db, "cfg", "writer")
	if err != nil {
		t.Fatalf("the writer after the reader's lease ran out: %v", err)
	}
	if _, err := testdb.One(lk.Release(ctx, db, w)); err != nil {
		t.Fatal(err)
	}
	r, err := testdb.One(lk.Acquire(ctx, db, locker.Request{Keys: []locker.Key{{Name: "cfg", Mode: locker.ModeShared}}, Owner: "reader"}))
	if err != nil {
		t.Fatalf("a reader after the writer's release: %v", err)
	}
	var kind string
	var prevOwner *string
	var prevToken *int64
	if err := db.QueryRow(ctx, `SELECT kind, previous_owner, previous_token FROM distributed_lock_event
		WHERE lock_key = 'cfg' AND fence_token = $1`, r.Token).Scan(&kind, &prevOwner, &prevToken); err != nil {
		t.Fatal(err)
	}
	if r.Outcome != locker.Acquired || kind != "acquired" || prevToken != nil {
		t.Fatalf("the reader after the writer's release: outcome %s, logged %s from %v token %v; want acquired, from no lease "+
			"(the lapsed reader's token %d ended when the writer, token %d, took the key)",
			r.Outcome, kind, deref(prevOwner), deref(prevToken), lapsed.Token, w.Token)
	}
}

func deref[T any](p *T) any {
	if p == nil {
		return nil
	}
	return *p
}
