package store

import "context"

// ExplainWindow runs EXPLAIN (ANALYZE, FORMAT JSON) on s's window statement
// anchored at key, with the arguments ListLocks would send.
func ExplainWindow(ctx context.Context, db DBTX, s Sort, key string, before, after int) (string, error) {
	a, _, err := maybeOne[anchorRow](db.Query(ctx, anchorSQL, key, ""))
	if err != nil {
		return "", err
	}
	var plan string
	err = db.QueryRow(ctx, "EXPLAIN (ANALYZE, FORMAT JSON) "+windowSQL[s], windowArgs(s, a, "", before, after)...).Scan(&plan)
	return plan, err
}

// ReleaseSQL are the release statements, for tests that run one where
// Release would not (inside a transaction, to look at its settings).
var ReleaseSQL = map[string]string{"plain": releaseSQL, "logged": releaseLoggedSQL}

// ApplyScript runs a schema script, for tests that migrate with an earlier
// version's schema (testdata).
var ApplyScript = applyScript
