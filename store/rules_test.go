package store_test

import (
	"context"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/lockctl/lockctl/internal/testdb"
)

// The shared rules cost nothing at run time: PostgreSQL inlines them, so a
// plan shows their expressions and never a call (a rule that stopped being
// inlinable, say by gaining a SET clause, would show up here by name).
func TestRulesAreInlined(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.New(t)
	for _, c := range []struct {
		sql     string
		inlined []string
		shows   string // what the inlined expression reads
	}{
		{`SELECT distributed_lock_may_take(l, 'o', session_user, c.ts), distributed_lock_admits(l, 'shared', NULL, NULL, c.ts), distributed_lock_refusal(l, c.ts),
		         distributed_lock_grant_kind(l, 'o', session_user)
		  FROM distributed_lock l, (SELECT now() AS ts OFFSET 0) c`,
			[]string{"distributed_lock_may_take", "distributed_lock_admits", "distributed_lock_live", "distributed_lock_held", "distributed_lock_open",
				"distributed_lock_promised", "distributed_lock_refusal", "distributed_lock_grant_kind",
				"distributed_lock_delayed", "distributed_lock_delay_end"},
			"wake_until"},
		{`SELECT distributed_lock_delayed(l, c.ts), distributed_lock_delay_end(l)
		  FROM distributed_lock l, (SELECT now() AS ts OFFSET 0) c`,
			[]string{"distributed_lock_delayed", "distributed_lock_delay_end", "distributed_lock_open"}, "lock_delay"},
		{`SELECT distributed_lock_session_live(s, 'o', c.ts)
		  FROM distributed_lock_session s, (SELECT now() AS ts OFFSET 0) c`,
			[]string{"distributed_lock_session_live"}, "expires_at"},
		{`SELECT l.expires_at = distributed_lock_group_end() FROM distributed_lock l`,
			[]string{"distributed_lock_group_end"}, "9999-01-01"},
		{`SELECT distributed_lock_runs_group(l, 4) FROM distributed_lock l`,
			[]string{"distributed_lock_runs_group", "distributed_lock_of_kind", "distributed_lock_group_end"}, "9999-01-01"},
		{`SELECT l.lock_mode = distributed_lock_holder_mode(l.permits) FROM distributed_lock l`,
			[]string{"distributed_lock_holder_mode"}, "semaphore"},
		{`SELECT distributed_lock_lazily(l.released_at IS NULL) FROM distributed_lock l`,
			[]string{"distributed_lock_lazily"}, "set_config"},
		{`SELECT distributed_lock_draw_token(e.timeline) FROM distributed_lock_epoch e`,
			[]string{"distributed_lock_draw_token", "distributed_lock_timeline"}, "nextval"},
		// The clock, as a call reads it and as a reader does.
		{`SELECT l.expires_at > distributed_lock_now() FROM distributed_lock l`,
			[]string{"distributed_lock_now"}, "clock_timestamp()"},
		{`SELECT l.expires_at - c.ts FROM distributed_lock l, (SELECT distributed_lock_now() AS ts) c`,
			[]string{"distributed_lock_now"}, "clock_timestamp()"},
	} {
		rows, err := db.Query(ctx, "EXPLAIN (VERBOSE, COSTS OFF) "+c.sql)
		if err != nil {
			t.Fatal(err)
		}
		lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			t.Fatal(err)
		}
		plan := strings.Join(lines, "\n")
		for _, name := range c.inlined {
			if strings.Contains(plan, name+"(") {
				t.Errorf("%s is called, not inlined:\n%s", name, plan)
			}
		}
		if !strings.Contains(plan, c.shows) {
			t.Errorf("plan does not show the rule's expression (%s):\n%s", c.shows, plan)
		}
	}
}

// A LANGUAGE sql function PostgreSQL cannot inline (a subquery in its body,
// a volatile argument) is planned anew at every call: on the paths every
// grant, release and wait takes, each function is either inlined or
// PL/pgSQL, whose plans are kept. The paths run in a transaction with
// function statistics on, once the session's plans are made (PostgreSQL
// plans a statement afresh for its first five runs); an SQL function still
// called then is called at every run.
func TestHotPathsCallNoSQLFunction(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	conn, err := testdb.New(t).Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	var called map[string]string
	for range 8 {
		called = callsOfHotPaths(t, conn.Conn())
	}
	// The paths ran as meant: the hand-off, the joining waiter's check and
	// the release beside the other holder.
	for _, name := range []string{"distributed_lock_pass_on", "distributed_lock_queued_ahead", "distributed_lock_serve_beside"} {
		if called[name] == "" {
			t.Errorf("%s was not called: the scenario missed its path (called: %v)", name, called)
		}
	}
	for name, lang := range called {
		if lang == "sql" {
			t.Errorf("%s, LANGUAGE sql, is called at every run: inline it or make it PL/pgSQL", name)
		}
	}
}

// callsOfHotPaths runs an exclusive cycle, a hand-off to a queued waiter,
// and a semaphore's holder handing its permit to waiters queued beside each
// other, in one transaction it rolls back, and returns the functions of the
// lock schema that were called, with their language.
func callsOfHotPaths(t *testing.T, conn *pgx.Conn) map[string]string {
	t.Helper()
	ctx := context.Background()
	tx, err := conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	const ttl, claim, seen = 30_000_000, 2_000_000, 15_000_000
	token := func(sql string, args ...any) int64 {
		t.Helper()
		var tok *int64
		if err := tx.QueryRow(ctx, sql, args...).Scan(&tok); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
		if tok == nil {
			t.Fatalf("%s %v: no lease", sql, args)
		}
		return *tok
	}
	run := func(sql string, args ...any) {
		t.Helper()
		if _, err := tx.Exec(ctx, sql, args...); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	run(`SET LOCAL track_functions = 'all'`)
	tok := token(`SELECT fence_token FROM distributed_lock_acquire('x', 'a', $1)`, ttl)
	run(`SELECT distributed_lock_acquire('x', 'b', $1)`, ttl) // refused: held
	run(`SELECT distributed_lock_renew('x', 'a', $1, $2)`, tok, ttl)
	run(`SELECT distributed_lock_release('x', 'a', $1)`, tok)
	tok = token(`SELECT fence_token FROM distributed_lock_acquire('q', 'h', $1)`, ttl)
	for _, w := range []string{"w1", "w2"} {
		run(`SELECT distributed_lock_enqueue('q', $1, $2, $3, $4)`, w, ttl, claim, seen)
	}
	run(`SELECT distributed_lock_release('q', 'h', $1)`, tok)
	var held []int64
	for _, h := range []string{"h1", "h2"} {
		held = append(held, token(`SELECT fence_token FROM distributed_lock_acquire_shared('s', $1, $2, 2)`, h, ttl))
	}
	for _, w := range []string{"w1", "w2", "w3"} {
		run(`SELECT distributed_lock_enqueue_shared('s', $1, $2, 2, $3, $4)`, w, ttl, claim, seen)
	}
	run(`SELECT distributed_lock_acquire_shared('s', 'w4', $1, 2)`, ttl) // refused: queued
	run(`SELECT distributed_lock_renew('s', 'h2', $1, $2)`, held[1], ttl)
	run(`SELECT distributed_lock_release('s', 'h1', $1)`, held[0])

	rows, err := tx.Query(ctx, `
		SELECT f.funcname, lg.lanname FROM pg_stat_xact_user_functions f
		JOIN pg_proc p ON p.oid = f.funcid JOIN pg_language lg ON lg.oid = p.prolang
		WHERE f.schemaname = current_schema() AND f.calls > 0`)
	if err != nil {
		t.Fatal(err)
	}
	called, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) ([2]string, error) {
		var f [2]string
		return f, row.Scan(&f[0], &f[1])
	})
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]string{}
	for _, f := range called {
		byName[f[0]] = f[1]
	}
	return byName
}
