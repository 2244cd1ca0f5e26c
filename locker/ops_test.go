package locker_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/lockctl/lockctl/internal/lockdb"
	"github.com/lockctl/lockctl/internal/lockview"
	"github.com/lockctl/lockctl/internal/operator"
	"github.com/lockctl/lockctl/internal/testdb"
	"github.com/lockctl/lockctl/locker"
)

// rowOf reads key's row without the fields computed from the read time, so
// two reads of an unchanged row compare equal.
func rowOf(t *testing.T, db locker.DBTX, key string) lockview.Lock {
	t.Helper()
	row, found, err := lockview.Get(context.Background(), db, key)
	if err != nil || !found {
		t.Fatalf("read %q: found=%v err=%v", key, found, err)
	}
	row.Remaining, row.HeldFor, row.DBNow = 0, 0, time.Time{}
	return row
}

func eventsOf(t *testing.T, db locker.DBTX, key string) []lockview.Event {
	t.Helper()
	evs, err := lockview.KeyEvents(context.Background(), db, key, 1000)
	if err != nil {
		t.Fatal(err)
	}
	return evs
}

// notHeldErr asserts err is a *NotHeldError and returns it.
func notHeldErr(t *testing.T, what string, err error) *locker.Error {
	t.Helper()
	var nh *locker.Error
	if !errors.Is(err, locker.ErrNotHeld) || !errors.As(err, &nh) {
		t.Fatalf("%s = %v; want a *NotHeldError (ErrNotHeld)", what, err)
	}
	return nh
}

// stolenSetup has b steal a's expired lease on "k"; logGrants is the
// lockers' Config.LogGrants. Both leases are a minute long: a's is made to
// expire on the database clock, and b's outlasts the test.
func stolenSetup(t *testing.T, logGrants bool) (db *pgxpool.Pool, lk *locker.Locker, victim, thief locker.Lease) {
	t.Helper()
	db = testdb.New(t)
	lk = testdb.Locker(t, locker.Config{TTL: time.Minute, LogGrants: logGrants})
	victim = testdb.MustAcquire(t, lk, db, "k", "a")
	testdb.ExpireLease(t, db, "k")
	thief = testdb.MustAcquire(t, lk, db, "k", "b")
	if thief.Outcome != locker.Stolen || thief.Token <= victim.Token {
		t.Fatalf("steal = %+v; want stolen with a token above %d", thief, victim.Token)
	}
	return db, lk, victim, thief
}

func TestHeldErrorNamesTheHolder(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.New(t)
	lk := testdb.Locker(t, locker.Config{TTL: 10 * time.Second})
	holder := testdb.MustAcquire(t, lk, db, "jobs:nightly", "a")

	_, err := testdb.Try(ctx, lk, db, "jobs:nightly", "b")
	var held *locker.Error
	if !errors.As(err, &held) || !errors.Is(err, locker.ErrHeld) {
		t.Fatalf("acquire of a held key = %v; want *HeldError", err)
	}
	if held.Key != "jobs:nightly" || held.Owner != "a" || held.Token != holder.Token ||
		!held.ExpiresAt.Equal(holder.ExpiresAt) || held.Remaining <= 9*time.Second || held.Remaining > 10*time.Second {
		t.Fatalf("HeldError = %+v; want key jobs:nightly, owner a, token %d, expiry %s, ~10s remaining",
			held, holder.Token, holder.ExpiresAt)
	}
	for _, want := range []string{`"jobs:nightly"`, `"a"`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("message %q does not name %s", err, want)
		}
	}
}

func TestRenew(t *testing.T) {
	t.Parallel()
	ctx := context.Background()

	t.Run("current lease", func(t *testing.T) {
		t.Parallel()
		db := testdb.New(t)
		lk := testdb.Locker(t, locker.Config{TTL: time.Minute})
		lease := testdb.MustAcquire(t, lk, db, "k", "a")
		renewed, err := testdb.One(lk.Renew(ctx, db, lease))
		if err != nil || renewed.Outcome != locker.Renewed || renewed.Token != lease.Token ||
			!renewed.ExpiresAt.After(lease.ExpiresAt) || renewed.ValidFor() <= 59*time.Second {
			t.Fatalf("renew = %+v, %v; want renewed, token %d, later expiry, ~1m valid", renewed, err, lease.Token)
		}
		if row := rowOf(t, db, "k"); row.RenewCount != 1 || row.RenewedAt == nil || !row.ExpiresAt.Equal(renewed.ExpiresAt) {
			t.Fatalf("row after renew = %+v; want renew_count 1, renewed_at set, expiry %s", row, renewed.ExpiresAt)
		}
	})

	t.Run("after a steal", func(t *testing.T) {
		t.Parallel()
		db, lk, victim, thief := stolenSetup(t, false)
		_, err := testdb.One(lk.Renew(ctx, db, victim))
		nh := notHeldErr(t, "renew of a stolen lease", err)
		if nh.Current == nil || nh.Current.Owner != "b" || nh.Current.Token != thief.Token {
			t.Fatalf("NotHeldError.Current = %+v; want the thief b with token %d", nh.Current, thief.Token)
		}
		if !strings.Contains(err.Error(), `"b"`) {
			t.Errorf("message %q does not name the new holder", err)
		}
	})

	t.Run("after expiry", func(t *testing.T) {
		t.Parallel()
		db := testdb.New(t)
		lk := testdb.Locker(t, locker.Config{TTL: time.Minute})
		lease := testdb.MustAcquire(t, lk, db, "k", "a")
		testdb.ExpireLease(t, db, "k")
		_, err := testdb.One(lk.Renew(ctx, db, lease))
		nh := notHeldErr(t, "renew of an expired lease", err)
		if nh.Current == nil || nh.Current.Token != lease.Token || nh.Current.State() != lockdb.StateExpired {
			t.Fatalf("Current = %+v; want the same grant, expired", nh.Current)
		}
		if !strings.Contains(err.Error(), "expired") {
			t.Errorf("message %q does not say it expired", err)
		}
	})

	t.Run("wrong token or owner", func(t *testing.T) {
		t.Parallel()
		db := testdb.New(t)
		lk := testdb.Locker(t, locker.Config{TTL: time.Minute})
		lease := testdb.MustAcquire(t, lk, db, "k", "a")
		before := rowOf(t, db, "k")
		for _, bad := range []locker.Lease{
			locker.Lease{Key: "k", Owner: "a", Token: lease.Token + 1},
			locker.Lease{Key: "k", Owner: "b", Token: lease.Token},
			locker.Lease{Key: "other", Owner: "a", Token: lease.Token},
		} {
			_, err := testdb.One(lk.Renew(ctx, db, bad))
			notHeldErr(t, "renew of "+bad.Owner, err)
		}
		if after := rowOf(t, db, "k"); !reflect.DeepEqual(before, after) {
			t.Fatalf("refused renewals changed the row:\nbefore %+v\nafter  %+v", before, after)
		}
	})
}

func TestRelease(t *testing.T) {
	t.Parallel()
	ctx := context.Background()

	t.Run("current lease, then twice", func(t *testing.T) {
		t.Parallel()
		db := testdb.New(t)
		lk := testdb.Locker(t, locker.Config{TTL: time.Minute, LogGrants: true})
		lease := testdb.MustAcquire(t, lk, db, "k", "a")
		rel, err := testdb.One(lk.Release(ctx, db, lease))
		if err != nil || rel.Outcome != locker.Released || rel.Token != lease.Token {
			t.Fatalf("release = %+v, %v", rel, err)
		}
		row := rowOf(t, db, "k")
		if row.ReleasedAt == nil || row.Owner != "a" || row.Token != lease.Token {
			t.Fatalf("row after release = %+v; want kept, free, last holder a", row)
		}
		_, err = testdb.One(lk.Release(ctx, db, lease))
		nh := notHeldErr(t, "second release", err)
		if !strings.Contains(nh.Error(), "released") {
			t.Errorf("message %q does not say it was released", nh)
		}
		if after := rowOf(t, db, "k"); !reflect.DeepEqual(row, after) {
			t.Fatalf("second release changed the row:\nbefore %+v\nafter  %+v", row, after)
		}
		if n := len(eventsOf(t, db, "k")); n != 2 {
			t.Fatalf("%d events; want acquired and one released", n)
		}
	})

	t.Run("stale token after a steal", func(t *testing.T) {
		t.Parallel()
		db, lk, victim, thief := stolenSetup(t, false)
		before, beforeEvents := rowOf(t, db, "k"), eventsOf(t, db, "k")
		_, err := testdb.One(lk.Release(ctx, db, victim))
		nh := notHeldErr(t, "release by the old holder", err)
		if nh.Current == nil || nh.Current.Token != thief.Token {
			t.Fatalf("Current = %+v; want the thief's grant %d", nh.Current, thief.Token)
		}
		if after := rowOf(t, db, "k"); !reflect.DeepEqual(before, after) {
			t.Fatalf("stale release changed the row:\nbefore %+v\nafter  %+v", before, after)
		}
		if n := len(eventsOf(t, db, "k")); n != len(beforeEvents) {
			t.Fatalf("stale release wrote an event")
		}
		// The thief still holds it.
		if _, err := testdb.One(lk.Renew(ctx, db, thief)); err != nil {
			t.Fatalf("thief's renew after the stale release: %v", err)
		}
	})
}

func TestForceOperations(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ops := []struct {
		name    string
		run     func(operator.Operator, context.Context, locker.DBTX, string, int64) (locker.Lease, error)
		outcome locker.Outcome
		kind    string
		state   lockdb.State
		next    locker.Outcome // the next acquirer's outcome
	}{
		{"force-expire", operator.Operator.ForceExpire, operator.Expired, lockdb.EventForceExpired, lockdb.StateExpired, locker.Stolen},
		{"force-release", operator.Operator.ForceRelease, operator.ForceReleased, lockdb.EventForceReleased, lockdb.StateFree, locker.Acquired},
	}
	for _, op := range ops {
		t.Run(op.name+" current token", func(t *testing.T) {
			t.Parallel()
			db := testdb.New(t)
			owners := testdb.Locker(t, locker.Config{TTL: time.Minute})
			oper := testdb.Operator(t, "ops@console")
			lease := testdb.MustAcquire(t, owners, db, "k", "a")

			got, err := op.run(oper, ctx, db, "k", lease.Token)
			if err != nil || got.Outcome != op.outcome || got.Token != lease.Token || got.Owner != "a" {
				t.Fatalf("%s = %+v, %v; want %s of a's token %d", op.name, got, err, op.outcome, lease.Token)
			}
			if row := rowOf(t, db, "k"); row.Owner != "a" || row.Token != lease.Token {
				t.Fatalf("row = %+v", row)
			}
			if row, _, _ := lockview.Get(ctx, db, "k"); row.State() != op.state {
				t.Fatalf("state after %s = %s; want %s", op.name, row.State(), op.state)
			}
			ev := eventsOf(t, db, "k")[0]
			if ev.Kind != op.kind || ev.Actor != "ops@console" || *ev.Owner != "a" || *ev.Token != lease.Token {
				t.Fatalf("event = %+v (owner %v, token %v); want %s by ops@console on a's token %d",
					ev, *ev.Owner, *ev.Token, op.kind, lease.Token)
			}
			if _, err := testdb.One(owners.Renew(ctx, db, lease)); !errors.Is(err, locker.ErrNotHeld) {
				t.Fatalf("holder's renew after %s = %v; want ErrNotHeld", op.name, err)
			}
			next := testdb.MustAcquire(t, owners, db, "k", "b")
			if next.Outcome != op.next || next.Token <= lease.Token {
				t.Fatalf("next acquire = %+v; want %s with a token above %d", next, op.next, lease.Token)
			}
		})
		t.Run(op.name+" stale token", func(t *testing.T) {
			t.Parallel()
			db, owners, victim, thief := stolenSetup(t, false)
			oper := testdb.Operator(t, "ops@console")
			before, beforeEvents := rowOf(t, db, "k"), eventsOf(t, db, "k")
			_, err := op.run(oper, ctx, db, "k", victim.Token)
			nh := notHeldErr(t, op.name+" with the token the operator saw before a steal", err)
			if nh.Current == nil || nh.Current.Token != thief.Token || nh.Current.Owner != "b" {
				t.Fatalf("Current = %+v; want b's grant %d", nh.Current, thief.Token)
			}
			if after := rowOf(t, db, "k"); !reflect.DeepEqual(before, after) {
				t.Fatalf("refused %s changed the row:\nbefore %+v\nafter  %+v", op.name, before, after)
			}
			if after := eventsOf(t, db, "k"); len(after) != len(beforeEvents) {
				t.Fatalf("refused %s wrote an event: %+v", op.name, after[0])
			}
			if _, err := testdb.One(owners.Renew(ctx, db, thief)); err != nil {
				t.Fatalf("current holder's renew after a refused %s: %v", op.name, err)
			}
			if _, err := op.run(oper, ctx, db, "missing", 1); !errors.Is(err, locker.ErrNotHeld) {
				t.Fatalf("%s of a key with no row = %v; want ErrNotHeld", op.name, err)
			}
		})
	}
}

func TestEventsOfAcquireStealRelease(t *testing.T) {
	t.Parallel()
	type ev struct {
		kind, owner, actor string
		token              int64
		prevOwner          string
		prevToken          int64
	}
	for _, logGrants := range []bool{true, false} {
		t.Run(fmt.Sprintf("LogGrants %v", logGrants), func(t *testing.T) {
			t.Parallel()
			db, lk, victim, thief := stolenSetup(t, logGrants)
			ctx := context.Background()
			if _, err := testdb.One(lk.Renew(ctx, db, thief)); err != nil {
				t.Fatal(err)
			}
			if _, err := testdb.One(lk.Release(ctx, db, thief)); err != nil {
				t.Fatal(err)
			}
			evs := eventsOf(t, db, "k") // newest first
			var got []ev
			for i := len(evs) - 1; i >= 0; i-- {
				e := evs[i]
				g := ev{kind: e.Kind, owner: *e.Owner, actor: e.Actor, token: *e.Token}
				if e.PreviousOwner != nil {
					g.prevOwner, g.prevToken = *e.PreviousOwner, *e.PreviousToken
				}
				got = append(got, g)
			}
			// The renewal is never logged; the steal always is.
			steal := ev{kind: "stolen", owner: "b", actor: "b", token: thief.Token, prevOwner: "a", prevToken: victim.Token}
			want := []ev{steal}
			if logGrants {
				want = []ev{
					{kind: "acquired", owner: "a", actor: "a", token: victim.Token},
					steal,
					{kind: "released", owner: "b", actor: "b", token: thief.Token},
				}
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("events (oldest first):\n got %+v\nwant %+v", got, want)
			}
			for i := 1; i < len(evs); i++ {
				if evs[i-1].OccurredAt.Before(evs[i].OccurredAt) {
					t.Fatalf("event times go backwards: %v", evs)
				}
			}
		})
	}
}

// noSQL is a DBTX that records being used: arguments that fail validation
// must be refused before anything is sent.
type noSQL struct{ calls int }

var errNoSQL = errors.New("test: no SQL expected")

func (n *noSQL) Exec(context.Context, string, ...any) (pgconn.CommandTag, error) {
	n.calls++
	return pgconn.CommandTag{}, errNoSQL
}
func (n *noSQL) Query(context.Context, string, ...any) (pgx.Rows, error) {
	n.calls++
	return nil, errNoSQL
}
func (n *noSQL) QueryRow(context.Context, string, ...any) pgx.Row {
	n.calls++
	return errRow{}
}

type errRow struct{}

func (errRow) Scan(...any) error { return errNoSQL }

func TestValidationBeforeSQL(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	lk := testdb.Locker(t, locker.Config{TTL: time.Minute})
	badTexts := map[string]string{
		"empty": "", "too long": strings.Repeat("x", 256), "invalid UTF-8": "a\xffb", "NUL": "a\x00b",
	}
	for name, bad := range badTexts {
		calls := map[string]func(locker.DBTX) error{
			"TryAcquire key": func(db locker.DBTX) error { _, err := testdb.Try(ctx, lk, db, bad, "o"); return err },
			"Acquire key":    func(db locker.DBTX) error { _, err := testdb.Wait(ctx, lk, db, bad, "o"); return err },
			"ForceExpire":    func(db locker.DBTX) error { _, err := (operator.Operator{}).ForceExpire(ctx, db, bad, 1); return err },
			"ForceRelease":   func(db locker.DBTX) error { _, err := (operator.Operator{}).ForceRelease(ctx, db, bad, 1); return err },
			"Renew key": func(db locker.DBTX) error {
				_, err := testdb.One(lk.Renew(ctx, db, locker.Lease{Key: bad, Owner: "o", Token: 1}))
				return err
			},
			"Release key": func(db locker.DBTX) error {
				_, err := testdb.One(lk.Release(ctx, db, locker.Lease{Key: bad, Owner: "o", Token: 1}))
				return err
			},
			"Fence key": func(db locker.DBTX) error { return locker.Fence(ctx, db, locker.Lease{Key: bad, Owner: "o", Token: 1}) },
		}
		ownerCalls := map[string]func(locker.DBTX) error{
			"TryAcquire owner": func(db locker.DBTX) error { _, err := testdb.Try(ctx, lk, db, "k", bad); return err },
			"Acquire owner":    func(db locker.DBTX) error { _, err := testdb.Wait(ctx, lk, db, "k", bad); return err },
			"Renew owner": func(db locker.DBTX) error {
				_, err := testdb.One(lk.Renew(ctx, db, locker.Lease{Key: "k", Owner: bad, Token: 1}))
				return err
			},
			"Release owner": func(db locker.DBTX) error {
				_, err := testdb.One(lk.Release(ctx, db, locker.Lease{Key: "k", Owner: bad, Token: 1}))
				return err
			},
			"Fence owner": func(db locker.DBTX) error { return locker.Fence(ctx, db, locker.Lease{Key: "k", Owner: bad, Token: 1}) },
		}
		for op, call := range calls {
			db := &noSQL{}
			if err := call(db); !errors.Is(err, locker.ErrInvalid) || db.calls != 0 {
				t.Errorf("%s with a key that is %s = %v after %d statements; want ErrInvalidKey before any", op, name, err, db.calls)
			}
		}
		for op, call := range ownerCalls {
			db := &noSQL{}
			if err := call(db); !errors.Is(err, locker.ErrInvalid) || db.calls != 0 {
				t.Errorf("%s with an owner that is %s = %v after %d statements; want ErrInvalidOwner before any", op, name, err, db.calls)
			}
		}
	}

	db := &noSQL{}
	bad := locker.Lease{Key: "k", Owner: "o", Token: 1}
	bad.TTL = -time.Second
	if _, err := testdb.One(lk.Renew(ctx, db, bad)); !errors.Is(err, locker.ErrInvalid) || db.calls != 0 {
		t.Errorf("Renew with a negative TTL = %v after %d statements; want ErrInvalidTTL before any", err, db.calls)
	}
	for _, ttl := range []time.Duration{time.Microsecond, -time.Second, locker.MaxTTL + time.Hour} {
		if _, err := locker.New(locker.Config{TTL: ttl}); !errors.Is(err, locker.ErrInvalid) {
			t.Errorf("New with TTL %s = %v; want ErrInvalidTTL", ttl, err)
		}
		db := &noSQL{}
		if _, err := lk.Acquire(ctx, db, locker.Request{Keys: locker.Keys("k"), Owner: "o", TTL: ttl}); !errors.Is(err, locker.ErrInvalid) || db.calls != 0 {
			t.Errorf("Acquire with TTL %s = %v after %d statements; want ErrInvalidTTL before any", ttl, err, db.calls)
		}
	}
	if _, err := locker.New(locker.Config{Actor: "a\x00"}); !errors.Is(err, locker.ErrInvalid) {
		t.Errorf("New with a NUL in Actor = %v; want ErrInvalidOwner", err)
	}
}
