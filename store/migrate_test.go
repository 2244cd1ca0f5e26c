package store_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/lockctl/lockctl/internal/lockdb"
	"github.com/lockctl/lockctl/internal/testdb"
	"github.com/lockctl/lockctl/store"
)

// badRowSQL are writes that break a value rule of the schema, each with
// valid values everywhere else. The columns only the protocol computes (a
// token, a grant's kind, the mode) have no rule to break (001_initial_schema.sql).
var badRowSQL = map[string]string{
	"empty key": `INSERT INTO distributed_lock (lock_key, owner_id, fence_token, expires_at, ttl, acquired_at)
		VALUES ('', 'o', 1, now(), '1s', now())`,
	"owner over 255 bytes": `INSERT INTO distributed_lock (lock_key, owner_id, fence_token, expires_at, ttl, acquired_at)
		VALUES ('k', repeat('é', 128), 1, now(), '1s', now())`,
	"ttl 0": `INSERT INTO distributed_lock (lock_key, owner_id, fence_token, expires_at, ttl, acquired_at)
		VALUES ('k', 'o', 1, now(), '0s', now())`,
	"metadata array": `INSERT INTO distributed_lock (lock_key, owner_id, fence_token, expires_at, ttl, acquired_at, metadata)
		VALUES ('k', 'o', 1, now(), '1s', now(), '[]')`,
	"update to empty owner": `UPDATE distributed_lock SET owner_id = '' WHERE lock_key = 'kept'`,
	"event kind":            `INSERT INTO distributed_lock_event (lock_key, kind, actor) VALUES ('k', 'renewed', 'a')`,
	"empty actor":           `INSERT INTO distributed_lock_event (lock_key, kind, actor) VALUES ('k', 'released', '')`,
	"waiter owner":          `INSERT INTO distributed_lock_waiter (lock_key, owner_id, seen_until) VALUES ('k', '', now())`,
}

const keptRowSQL = `INSERT INTO distributed_lock (lock_key, owner_id, fence_token, expires_at, ttl, acquired_at)
	VALUES ('kept', 'o', 7, now(), '1s', now())`

func TestSchemaRefusesBadValues(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	ctx := context.Background()
	if _, err := db.Exec(ctx, keptRowSQL); err != nil {
		t.Fatal(err)
	}
	assertRefused(t, db.Exec)
}

func assertRefused(t *testing.T, exec func(context.Context, string, ...any) (pgconn.CommandTag, error)) {
	t.Helper()
	for name, sql := range badRowSQL {
		_, err := exec(context.Background(), sql)
		var pgErr *pgconn.PgError
		if !errors.As(err, &pgErr) || pgErr.Code != "23514" {
			t.Errorf("%s: %v; want a check violation", name, err)
			continue
		}
		if !strings.Contains(pgErr.Message, "distributed_lock_") {
			t.Errorf("%s: %q does not name the rule", name, pgErr.Message)
		}
	}
}

// internalFunctions run inside the protocol functions, as their owner.
var internalFunctions = map[string]bool{
	"distributed_lock_hand_off": true, "distributed_lock_keep_waking": true, "distributed_lock_revoke_cap": true,
	"distributed_lock_pass_on": true, "distributed_lock_first_grant": true, "distributed_lock_grant_lease": true, "distributed_lock_make_row": true,
	"distributed_lock_grant_waiter": true, "distributed_lock_log_gave_up": true, "distributed_lock_hand_off_group": true,
	"distributed_lock_wake_channel": true, "distributed_lock_wake": true, "distributed_lock_announce": true,
	"distributed_lock_key_set": true, "distributed_lock_grant_set": true, "distributed_lock_create_free": true, "distributed_lock_lock_set": true,
	"distributed_lock_set_handed": true, "distributed_lock_wait_cycle": true, "distributed_lock_cycle_back": true, "distributed_lock_awaited": true, "distributed_lock_waits": true, "distributed_lock_refuse_deadlock": true,
	"distributed_lock_session_lock": true, "distributed_lock_settle": true, "distributed_lock_form_group": true,
	"distributed_lock_take_slot": true, "distributed_lock_refuse": true, "distributed_lock_renew_holder": true,
	"distributed_lock_end_holders": true, "distributed_lock_fence_holder": true, "distributed_lock_force_holders": true,
	"distributed_lock_end_lapsed_group": true, "distributed_lock_grant_slot": true, "distributed_lock_holders_ended": true,
	"distributed_lock_grant_holder_waiter": true, "distributed_lock_serve_holders": true,
	"distributed_lock_queue_joinable": true, "distributed_lock_head_has_room": true,
	"distributed_lock_release_holder": true, "distributed_lock_serve_beside": true, "distributed_lock_lock_to_serve": true,
	"distributed_lock_queue_lock": true, "distributed_lock_try_queue_lock": true,
	"distributed_lock_lease_joinable": true, "distributed_lock_enqueue_beside": true,
	"distributed_lock_lock_to_queue": true, "distributed_lock_add_waiter": true, "distributed_lock_take_over_waiter": true,
	"distributed_lock_schema": true, "distributed_lock_admit_owner": true,
	"distributed_lock_head_upgrade": true, "distributed_lock_upgrade_due": true, "distributed_lock_upgrade_edges": true,
	"distributed_lock_acquire_otherwise": true, "distributed_lock_renew_own": true, "distributed_lock_release_slot": true,
	"distributed_lock_enqueue_locked": true, "distributed_lock_queued_answer": true, "distributed_lock_poll_locked": true,
	"distributed_lock_poll_answer": true, "distributed_lock_settle_set": true, "distributed_lock_hand_off_set": true,
	"distributed_lock_lock_to_join": true, "distributed_lock_queue_for_holder": true, "distributed_lock_make_group": true,
	"distributed_lock_join_group": true,
	"distributed_lock_set_wants":  true, "distributed_lock_take_set": true, "distributed_lock_take_all_now": true,
	"distributed_lock_serve_set_record": true, "distributed_lock_leave_slot": true,
}

// boundedWaits are the settings internal functions that wait for a lock
// only so long add to their pinned path.
var boundedWaits = map[string]string{
	"distributed_lock_lock_to_serve":  ";lock_timeout=500ms",
	"distributed_lock_release_holder": ";lock_timeout=200ms",
}

// ruleFunctions are the shared rules (sql/functions/02_rules.sql, the
// token draw, and a group's end and live holders in 11_shared.sql),
// inlined into the statements that use them where PostgreSQL can.
var ruleFunctions = map[string]bool{
	"distributed_lock_timeline": true, "distributed_lock_draw_token": true, "distributed_lock_reserved": true,
	"distributed_lock_held": true, "distributed_lock_open": true, "distributed_lock_live": true,
	"distributed_lock_is_group": true, "distributed_lock_of_kind": true, "distributed_lock_waits_for_group": true,
	"distributed_lock_asks_for": true, "distributed_lock_group_of": true, "distributed_lock_queue_live": true,
	"distributed_lock_queue_length": true, "distributed_lock_queue_position": true,
	"distributed_lock_delay_end": true, "distributed_lock_delayed": true,
	"distributed_lock_promised": true, "distributed_lock_admits": true, "distributed_lock_wants_key": true, "distributed_lock_waits_behind": true, "distributed_lock_queued_before": true, "distributed_lock_may_take": true,
	"distributed_lock_refusal": true, "distributed_lock_grant_kind": true, "distributed_lock_ever_held": true,
	"distributed_lock_session_live": true, "distributed_lock_group_end": true, "distributed_lock_runs_group": true, "distributed_lock_holder_mode": true, "distributed_lock_live_holders": true,
	"distributed_lock_queued_ahead": true,
	"distributed_lock_lease_end":    true, "distributed_lock_us": true, "distributed_lock_lazily": true,
	"distributed_lock_holders_end": true, "distributed_lock_key_state": true,
	"distributed_lock_now": true, "distributed_lock_leader_row": true, "distributed_lock_kept": true,
}

// publicFunctions may be executed by PUBLIC: the clock, which every reader
// calls, and which tells nobody more than clock_timestamp() does.
var publicFunctions = map[string]bool{"distributed_lock_now": true}

// Several lock namespaces (schemas) on one database each get the protocol
// functions in their own schema, bound to their own tables: a grant in one
// never touches another's rows. The functions run as their owner with a
// pinned search_path, and nobody else may call them until granted (but for
// the clock, publicFunctions).
func TestProtocolFunctionsStayInTheirSchema(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	one, two := testdb.New(t), testdb.New(t)
	for _, db := range []*pgxpool.Pool{one, two} {
		var schema string
		if err := db.QueryRow(ctx, `SELECT current_schema()`).Scan(&schema); err != nil {
			t.Fatal(err)
		}
		rows, err := db.Query(ctx, `
SELECT p.proname, p.pronamespace::regnamespace::text, p.prosecdef,
       coalesce(array_to_string(p.proconfig, ';'), ''), has_function_privilege('public', p.oid, 'EXECUTE')
FROM pg_proc p
WHERE p.proname LIKE 'distributed\_lock\_%' AND pg_function_is_visible(p.oid)
  AND p.proname <> 'distributed_lock_event_immutable'`)
		if err != nil {
			t.Fatal(err)
		}
		type fn struct {
			name, schema string
			definer      bool
			config       string
			public       bool
		}
		fns, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (f fn, err error) {
			err = r.Scan(&f.name, &f.schema, &f.definer, &f.config, &f.public)
			return f, err
		})
		if err != nil {
			t.Fatal(err)
		}
		if len(fns) < 12 {
			t.Fatalf("%d protocol functions found; want at least 12: %+v", len(fns), fns)
		}
		for _, f := range fns {
			want := "search_path=pg_catalog, " + schema + ", pg_temp"
			// The internal helpers run only inside the functions above, as
			// their owner: they need no SECURITY DEFINER. The rules pin no
			// path, so that PostgreSQL inlines them (TestRulesAreInlined).
			definer := !internalFunctions[f.name] && !ruleFunctions[f.name]
			if ruleFunctions[f.name] {
				want = ""
			}
			want += boundedWaits[f.name]
			if f.schema != schema || f.definer != definer || f.config != want || f.public != publicFunctions[f.name] {
				t.Errorf("%s: schema %s, security definer %v, config %q, PUBLIC may execute %v; want %s, %v, %q, %v",
					f.name, f.schema, f.definer, f.config, f.public, schema, definer, want, publicFunctions[f.name])
			}
		}
	}
	g, _, err := store.TryGrant(ctx, one, store.GrantParams{Key: "k", Owner: "a", TTL: time.Minute, Actor: "a"})
	if err != nil || !g.Granted() {
		t.Fatalf("grant in the first schema: %+v, %v", g, err)
	}
	if _, found, err := store.Get[lockdb.LockInfo](ctx, two, "k"); err != nil || found {
		t.Fatalf("the second schema sees the first one's grant: %v, %v", found, err)
	}
	first := g.Token
	g, _, err = store.TryGrant(ctx, two, store.GrantParams{Key: "k", Owner: "b", TTL: time.Minute, Actor: "b"})
	if err != nil || g.Outcome != lockdb.OutcomeAcquired || g.Token != first {
		t.Fatalf("grant of the same key in the second schema: %+v, %v; want acquired with its own first token %d", g, err, first)
	}
}
