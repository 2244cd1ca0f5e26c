package lockview

import (
	"context"

	"github.com/lockctl/lockctl/store"
)

// ExplainWindow runs EXPLAIN (ANALYZE, FORMAT JSON) on s's window statement
// anchored at key, with the arguments ListLocks would send.
func ExplainWindow(ctx context.Context, db store.DBTX, s Sort, key string, before, after int) (string, error) {
	a, _, err := maybeOne[anchorRow](db.Query(ctx, anchorSQL, key, ""))
	if err != nil {
		return "", err
	}
	var plan string
	err = db.QueryRow(ctx, "EXPLAIN (ANALYZE, FORMAT JSON) "+windowSQL[s], windowArgs(s, a, "", before, after)...).Scan(&plan)
	return plan, err
}

// LikePattern is likePattern, for the tests' reference queries.
var LikePattern = likePattern
