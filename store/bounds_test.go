package store_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lockctl/lockctl/internal/lockdb"
	"github.com/lockctl/lockctl/internal/testdb"
	"github.com/lockctl/lockctl/locker"
	"github.com/lockctl/lockctl/store"
)

// The schema bounds what it stores as the library does before sending it:
// a lease of locker.MaxTTL and a lock-delay of locker.MaxLockDelay are
// granted, a microsecond more is refused (lockdb.ErrInvalidValue), and the
// JSON bound is lockdb.MaxJSONBytes.
func TestSchemaBoundsAreTheLibrarys(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.New(t)
	for i, c := range []struct {
		ttl, delay time.Duration
		granted    bool
	}{
		{locker.MaxTTL, 0, true},
		{locker.MaxTTL + time.Microsecond, 0, false},
		{time.Millisecond, 0, true},
		{time.Millisecond - time.Microsecond, 0, false},
		{time.Minute, locker.MaxLockDelay, true},
		{time.Minute, locker.MaxLockDelay + time.Microsecond, false},
	} {
		key := "k" + strconv.Itoa(i)
		g, _, err := store.TryGrant(ctx, db, store.GrantParams{Key: key, Owner: "o", TTL: c.ttl, LockDelay: c.delay, Actor: "o"})
		if c.granted && (err != nil || !g.Granted()) {
			t.Errorf("TTL %s, lock-delay %s: %+v, %v; want granted", c.ttl, c.delay, g, err)
		}
		if !c.granted && !errors.Is(err, lockdb.ErrInvalidValue) {
			t.Errorf("TTL %s, lock-delay %s: %v; want lockdb.ErrInvalidValue", c.ttl, c.delay, err)
		}
	}
	var check string
	if err := db.QueryRow(ctx, `SELECT pg_get_constraintdef(c.oid) FROM pg_constraint c
		WHERE c.contypid = 'distributed_lock_json'::regtype`).Scan(&check); err != nil {
		t.Fatal(err)
	}
	if want := "<= " + strconv.Itoa(lockdb.MaxJSONBytes) + ")"; !strings.Contains(check, want) {
		t.Errorf("distributed_lock_json: %s; want a bound of lockdb.MaxJSONBytes, %d", check, lockdb.MaxJSONBytes)
	}
}
