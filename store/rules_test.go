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
		{`SELECT distributed_lock_may_take(l, 'o', c.ts), distributed_lock_may_grant(l, c.ts), distributed_lock_refusal(l, c.ts),
		         distributed_lock_grant_kind(l, 'o')
		  FROM distributed_lock l, (SELECT now() AS ts OFFSET 0) c`,
			[]string{"distributed_lock_may_take", "distributed_lock_may_grant", "distributed_lock_held", "distributed_lock_open",
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
		{`SELECT l.lock_mode = distributed_lock_holder_mode(l.permits) FROM distributed_lock l`,
			[]string{"distributed_lock_holder_mode"}, "semaphore"},
		{`SELECT distributed_lock_draw_token(e.timeline) FROM distributed_lock_epoch e`,
			[]string{"distributed_lock_draw_token", "distributed_lock_timeline"}, "nextval"},
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
