package lockview_test

import (
	"context"
	"slices"
	"testing"

	"github.com/lockctl/lockctl/internal/lockview"
	"github.com/lockctl/lockctl/internal/testdb"
)

// EachListed hands over every row the filter matches, in each order
// exactly as the slow reference query orders them, window after window,
// each row once.
func TestEachListedPagesThroughEveryOrder(t *testing.T) {
	t.Parallel()
	pool := testdb.New(t)
	ctx := context.Background()
	if _, err := pool.Exec(ctx, fillLocksSQL, 47); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, fillWaitersSQL, 5); err != nil {
		t.Fatal(err)
	}
	for _, order := range lockview.Sorts {
		for _, filter := range []string{"", "job:0000", "worker-3", "nothing matches"} {
			want := referenceKeys(t, pool, order, lockview.LikePattern(filter))
			for _, window := range []int{1, 5, 1000} {
				var got []string
				windows := 0
				err := lockview.EachListedIn(ctx, pool, filter, order, window, func(rows []lockview.ListedLock) error {
					windows++
					for _, r := range rows {
						got = append(got, r.Key)
					}
					return nil
				})
				if err != nil {
					t.Fatal(err)
				}
				if !slices.Equal(got, want) {
					t.Errorf("%s, filter %q, windows of %d: got %d rows %v\nwant %d %v", order, filter, window, len(got), got, len(want), want)
				}
				if window == 5 && len(want) > 10 && windows < len(want)/5 {
					t.Errorf("%s: %d rows in %d windows of 5", order, len(want), windows)
				}
			}
		}
	}
}
