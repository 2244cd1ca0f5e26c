package locker_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/lockctl/lockctl/internal/lockdb"
	"github.com/lockctl/lockctl/internal/operator"
	"github.com/lockctl/lockctl/internal/testdb"
	"github.com/lockctl/lockctl/locker"
	"github.com/lockctl/lockctl/store"
)

// seoul is a JVM's zone with no daylight saving time, nine hours from UTC:
// a conversion in the wrong zone moves every expiry by hours.
var seoul = time.FixedZone("Asia/Seoul", 9*3600)

// referenceLocks are rows as the reference service leaves them: two held
// leases and one whose holder died (expired, never deleted), with
// epoch-millis tokens.
func referenceLocks(now time.Time) []testdb.ReferenceLock {
	millis := now.UnixMilli()
	at := func(d time.Duration) time.Time { return now.Add(d).Truncate(time.Microsecond) }
	return []testdb.ReferenceLock{
		{Key: "orders:1", Owner: "app-1:thread-7", Token: millis - 5000, ExpiresAt: at(25 * time.Second)},
		{Key: "orders:2", Owner: "app-2:thread-3", Token: millis - 1000, ExpiresAt: at(10 * time.Minute)},
		{Key: "report:nightly", Owner: "app-1:thread-9", Token: millis - 90000, ExpiresAt: at(-time.Minute)},
	}
}

// Before migrate, a service sees the reference's table as unmigrated and
// changes nothing, its own Migrate included; after lockctl migrate, the reference's holders keep their leases
// (same owner, token and expiry instant), renew and release them with
// their tokens, and new grants draw tokens above every old one.
func TestMigrateAdoptsTheReferenceTable(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, _ := testdb.ReferencePool(t)
	reference := referenceLocks(testdb.DBNow(t, db))
	testdb.InsertReference(t, db, seoul, reference...)
	lk := testdb.Locker(t, locker.Config{TTL: time.Minute})

	writes := map[string]func() error{
		"TryAcquire": func() error { _, err := testdb.Try(ctx, lk, db, "new", "svc"); return err },
		"Renew": func() error {
			_, err := testdb.One(lk.Renew(ctx, db, locker.Lease{Key: reference[0].Key, Owner: reference[0].Owner, Token: reference[0].Token}))
			return err
		},
		"Release": func() error {
			_, err := testdb.One(lk.Release(ctx, db, locker.Lease{Key: reference[0].Key, Owner: reference[0].Owner, Token: reference[0].Token}))
			return err
		},
		"ForceExpire": func() error {
			_, err := (operator.Operator{}).ForceExpire(ctx, db, reference[1].Key, reference[1].Token)
			return err
		},
		"ForceRelease": func() error {
			_, err := (operator.Operator{}).ForceRelease(ctx, db, reference[1].Key, reference[1].Token)
			return err
		},
	}
	before := tableText(t, db)
	for name, write := range writes {
		if err := write(); !errors.Is(err, locker.ErrNotMigrated) {
			t.Errorf("%s on the reference table: %v; want ErrNotMigrated", name, err)
		}
	}
	if after := tableText(t, db); after != before {
		t.Fatalf("refused writes changed the reference table:\n%s\nbecame\n%s", before, after)
	}

	var maxOld int64
	for _, s := range reference {
		maxOld = max(maxOld, s.Token)
	}
	// A service's own Migrate at start-up leaves the table to the operator.
	if err := locker.Migrate(ctx, db); !errors.Is(err, lockdb.ErrCannotAdopt) || !strings.Contains(err.Error(), "lockctl migrate") {
		t.Fatalf("locker.Migrate on the reference table: %v; want ErrCannotAdopt pointing at lockctl migrate", err)
	}
	if after := tableText(t, db); after != before {
		t.Fatalf("a refused locker.Migrate changed the reference table:\n%s\nbecame\n%s", before, after)
	}
	adoption, err := store.MigrateWith(ctx, db, store.MigrateOptions{ReferenceTimeZone: "Asia/Seoul", AdoptReference: true})
	if err != nil {
		t.Fatal(err)
	}
	want := store.Adoption{Adopted: true, Locks: 3, Held: 2, MaxToken: maxOld, TimeZone: "Asia/Seoul"}
	if adoption != want {
		t.Errorf("migrate reported %+v; want %+v", adoption, want)
	}
	for _, s := range reference {
		info, found, err := store.Get[lockdb.LockInfo](ctx, db, s.Key)
		if err != nil || !found {
			t.Fatalf("%s after migrate: found %v, %v", s.Key, found, err)
		}
		if info.Owner != s.Owner || info.Token != s.Token || !info.ExpiresAt.Equal(s.ExpiresAt) {
			t.Errorf("%s after migrate = %s, %d, expires %s; want %s, %d, %s", s.Key,
				info.Owner, info.Token, info.ExpiresAt.UTC(), s.Owner, s.Token, s.ExpiresAt.UTC())
		}
		wantState := lockdb.StateHeld
		if s.ExpiresAt.Before(info.DBNow) {
			wantState = lockdb.StateExpired
		}
		if info.State() != wantState {
			t.Errorf("%s after migrate is %s; want %s", s.Key, info.State(), wantState)
		}
	}

	// The old holders go on with their tokens.
	held := locker.Lease{Key: reference[0].Key, Owner: reference[0].Owner, Token: reference[0].Token}
	renewed, err := testdb.One(lk.Renew(ctx, db, held))
	if err != nil || renewed.Token != reference[0].Token || !renewed.ExpiresAt.After(reference[0].ExpiresAt) {
		t.Fatalf("renew of an adopted lease = %+v, %v; want token %d kept and a later expiry", renewed, err, reference[0].Token)
	}
	if _, err := testdb.One(lk.Release(ctx, db, renewed)); err != nil {
		t.Fatalf("release of an adopted lease: %v", err)
	}
	if _, err := testdb.Try(ctx, lk, db, reference[1].Key, "intruder"); !errors.Is(err, locker.ErrHeld) {
		t.Fatalf("acquire of a held adopted lock: %v; want ErrHeld", err)
	}

	// New grants, steals and re-grants draw tokens above every old one.
	for _, key := range []string{"new", reference[2].Key, reference[0].Key} {
		lease, err := testdb.Try(ctx, lk, db, key, "lockctl-svc")
		if err != nil {
			t.Fatalf("acquire %s after migrate: %v", key, err)
		}
		if lease.Token <= maxOld {
			t.Errorf("acquire %s after migrate: token %d; want above the largest old token %d", key, lease.Token, maxOld)
		}
	}
}

// tableText is every row and column of distributed_lock as text.
func tableText(t *testing.T, db store.DBTX) string {
	t.Helper()
	var s string
	err := db.QueryRow(context.Background(),
		`SELECT coalesce(string_agg(l::text, E'\n' ORDER BY l.lock_key), '') FROM distributed_lock l`).Scan(&s)
	if err != nil {
		t.Fatal(err)
	}
	return s
}
