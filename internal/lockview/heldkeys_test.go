package lockview_test

import (
	"context"
	"slices"
	"testing"

	"github.com/lockctl/lockctl/internal/lockview"
	"github.com/lockctl/lockctl/internal/testdb"
	"github.com/lockctl/lockctl/locker"
)

// HeldKeys offers the keys with a live lease, not the expired or released
// ones, filtered by prefix and cut at the limit.
func TestHeldKeys(t *testing.T) {
	t.Parallel()
	pool := testdb.New(t)
	ctx := context.Background()
	lk := testdb.Locker(t, locker.Config{})
	for _, key := range []string{"job:b", "job:a", "report", "job:expired"} {
		testdb.MustAcquire(t, lk, pool, key, "w1")
	}
	testdb.ExpireLease(t, pool, "job:expired")
	if _, err := testdb.One(lk.Release(ctx, pool, testdb.MustAcquire(t, lk, pool, "job:released", "w1"))); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		prefix string
		limit  int
		want   []string
	}{
		{"", 10, []string{"job:a", "job:b", "report"}},
		{"job:", 10, []string{"job:a", "job:b"}},
		{"job:", 1, []string{"job:a"}},
		{"nope", 10, nil},
	}
	for _, c := range cases {
		got, err := lockview.HeldKeys(ctx, pool, c.prefix, c.limit)
		if err != nil || !slices.Equal(got, c.want) {
			t.Errorf("HeldKeys(%q, %d) = %q, %v; want %q", c.prefix, c.limit, got, err, c.want)
		}
	}
}

// DelayedKeys offers the keys in their lock-delay only: not a held one with
// a lock-delay to come, not one whose delay is over, nor a released one.
func TestDelayedKeys(t *testing.T) {
	t.Parallel()
	pool := testdb.New(t)
	ctx := context.Background()
	lk := testdb.Locker(t, locker.Config{})
	for _, key := range []string{"job:b", "job:a", "held", "over", "released"} {
		testdb.MustDelayed(t, lk, pool, key, "w1", locker.MaxLockDelay)
	}
	for _, key := range []string{"job:b", "job:a", "over"} {
		testdb.ExpireLease(t, pool, key)
	}
	testdb.AgeLock(t, pool, "over", locker.MaxLockDelay)
	if _, err := testdb.One(lk.Release(ctx, pool, testdb.MustAcquire(t, lk, pool, "released", "w1"))); err != nil {
		t.Fatal(err)
	}
	for prefix, want := range map[string][]string{"": {"job:a", "job:b"}, "job:b": {"job:b"}, "held": nil} {
		got, err := lockview.DelayedKeys(ctx, pool, prefix, 10)
		if err != nil || !slices.Equal(got, want) {
			t.Errorf("DelayedKeys(%q) = %q, %v; want %q", prefix, got, err, want)
		}
	}
}
