package roles_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/lockctl/lockctl/internal/roles"
	"github.com/lockctl/lockctl/store"
)

// helperCallsSQL lists a call of every helper of the lock schema that
// may write, each argument NULL of its type: a VOLATILE function that is
// no entry point (those run as the schema's owner, SECURITY DEFINER, and
// check their caller), such as a grant write, a hand-off or a group's
// join. They run only inside the entry points, as their owner. The clock,
// VOLATILE too, writes nothing, and every role may read it.
const helperCallsSQL = `
SELECT format('SELECT %s(%s)', p.oid::regproc,
              coalesce((SELECT string_agg(format('NULL::%s', format_type(a.t, NULL)), ', ' ORDER BY a.n)
                        FROM unnest(p.proargtypes::oid[]) WITH ORDINALITY a(t, n)), ''))
FROM pg_proc p
WHERE p.pronamespace = current_schema()::regnamespace AND p.provolatile = 'v' AND NOT p.prosecdef
  AND p.prorettype <> 'trigger'::regtype AND p.proname <> 'distributed_lock_now'`

// No role may call a helper itself: a service that could would write a
// grant (distributed_lock_grant_lease, distributed_lock_join_group) or
// hand a key to a waiter of its choosing (distributed_lock_hand_off)
// without the rules its entry point asks first. Each is tried as each role.
func TestNoRoleCallsAHelper(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := newEnv(t)
	for _, kind := range roles.Kinds {
		db := e.roleWith(t, kind)
		rows, _ := e.admin.Query(ctx, helperCallsSQL)
		calls, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			t.Fatal(err)
		}
		if len(calls) < 30 {
			t.Fatalf("only %d helpers found; want the protocol's internal functions", len(calls))
		}
		for _, call := range calls {
			_, err := db.Exec(ctx, call)
			wantDenied(t, string(kind)+": "+call, store.Interpret(err))
		}
	}
}
