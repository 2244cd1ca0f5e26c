package roles_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/lockctl/lockctl/internal/roles"
	"github.com/lockctl/lockctl/store"
)

// widerGrants are what earlier versions of lockctl granted (table writes,
// the sequence): a role that has them must lose them when granted again.
var widerGrants = []string{
	`GRANT USAGE ON SCHEMA %[1]s TO %[2]s`,
	`GRANT SELECT, INSERT, UPDATE, DELETE ON %[1]s.distributed_lock, %[1]s.distributed_lock_event, %[1]s.distributed_lock_waiter TO %[2]s`,
	`GRANT UPDATE (expires_at, released_at) ON %[1]s.distributed_lock TO %[2]s`,
	`GRANT USAGE, UPDATE ON SEQUENCE %[1]s.distributed_lock_fence_seq TO %[2]s`,
}

// forgeries are writes no role but the owner may make, whatever it is
// granted: each would let a role forge or rewind a token, revive a lease,
// change an owner, or write or erase history. $TOKEN is the held lock's
// token.
var forgeries = []struct{ what, sql string }{
	{"rewind a token", `UPDATE distributed_lock SET fence_token = 1`},
	{"revive a released lease", `UPDATE distributed_lock SET released_at = NULL, expires_at = now() + interval '100 years' WHERE lock_key = 'free'`},
	{"extend a lease", `UPDATE distributed_lock SET expires_at = now() + interval '100 years' WHERE lock_key = 'held'`},
	{"change an owner", `UPDATE distributed_lock SET owner_id = 'forged'`},
	{"insert a lock", `INSERT INTO distributed_lock (lock_key, owner_id, fence_token, expires_at, ttl, acquired_at) VALUES ('forged', 'x', 999999, now() + interval '1 day', '1 day', now())`},
	{"delete a lock", `DELETE FROM distributed_lock`},
	{"add a holder", `INSERT INTO distributed_lock (lock_key, slot, lock_mode, owner_id, fence_token, ttl, acquired_at, expires_at) VALUES ('held', 9, 'shared', 'forged', 999999, '1 day', now(), now() + interval '1 day')`},
	{"extend a holder", `UPDATE distributed_lock SET expires_at = now() + interval '100 years' WHERE slot > 0`},
	{"delete holders", `DELETE FROM distributed_lock WHERE slot > 0`},
	{"truncate the locks", `TRUNCATE distributed_lock`},
	{"insert an event", `INSERT INTO distributed_lock_event (lock_key, kind, actor) VALUES ('held', 'released', 'forged')`},
	{"delete events", `DELETE FROM distributed_lock_event`},
	{"truncate events", `TRUNCATE distributed_lock_event`},
	{"insert a waiter", `INSERT INTO distributed_lock_waiter (lock_key, owner_id, seen_until) VALUES ('held', 'x', now() + interval '1 day')`},
	{"delete waiters", `DELETE FROM distributed_lock_waiter`},
	{"open a session", `INSERT INTO distributed_lock_session (owner_id, ttl, opened_at, expires_at) VALUES ('x', '1 day', now(), now() + interval '100 years')`},
	{"extend a session", `UPDATE distributed_lock_session SET expires_at = now() + interval '100 years'`},
	{"delete sessions", `DELETE FROM distributed_lock_session`},
	{"bind a lease", `INSERT INTO distributed_lock_session_lease (lock_key, fence_token, session_id) VALUES ('held', 1, 1)`},
	{"unbind leases", `DELETE FROM distributed_lock_session_lease`},
	{"revoke behind the protocol", `INSERT INTO distributed_lock_revoke (lock_key, fence_token, requested_at, force_at, actor) VALUES ('held', 1, now(), now(), 'forged')`},
	{"lift a revoke's deadline", `UPDATE distributed_lock_revoke SET force_at = NULL`},
	{"draw a token", `SELECT nextval('distributed_lock_fence_seq')`},
	{"rewind the sequence", `SELECT setval('distributed_lock_fence_seq', 1)`},
	{"restart the sequence", `ALTER SEQUENCE distributed_lock_fence_seq RESTART WITH 1`},
	{"rewind the epoch", `UPDATE distributed_lock_epoch SET timeline = 0, base = 0`},
	{"replace a function", `CREATE OR REPLACE FUNCTION distributed_lock_fence(key text, owner text, token bigint) RETURNS boolean LANGUAGE sql AS 'SELECT true'`},
	{"drop a function", `DROP FUNCTION distributed_lock_acquire(text, text, bigint, jsonb, text, jsonb, boolean, bigint)`},
	{"shadow a table", `CREATE TABLE distributed_lock_shadow (x int)`},
	{"hold the prune gate", `BEGIN; LOCK TABLE distributed_lock_prune_gate IN SHARE MODE; COMMIT`},
	{"lock a waiter record", `BEGIN; SELECT FROM distributed_lock_waiter FOR UPDATE; COMMIT`},
}

// functionCalls are the protocol functions, called directly. $TOKEN is the
// held lock's token.
var functionCalls = map[string]string{
	"acquire":           `SELECT * FROM distributed_lock_acquire('held', 'x', 60000000)`,
	"acquire shared":    `SELECT * FROM distributed_lock_acquire_shared('sem', 'forger', 60000000, 3)`,
	"enqueue shared":    `SELECT * FROM distributed_lock_enqueue_shared('sem', 'forger', 60000000, 3, 1000000, 1000000)`,
	"renew":             `SELECT * FROM distributed_lock_renew('held', 'admin-owner', $TOKEN, 60000000)`,
	"release":           `SELECT * FROM distributed_lock_release('held', 'admin-owner', $TOKEN)`,
	"fence":             `SELECT distributed_lock_fence('held', 'admin-owner', $TOKEN)`,
	"stale write":       `SELECT distributed_lock_report_stale_write('held', 'admin-owner', $TOKEN)`,
	"enqueue":           `SELECT * FROM distributed_lock_enqueue('held', 'x', 60000000, 1000000, 1000000)`,
	"waiter poll":       `SELECT * FROM distributed_lock_waiter_poll('held', 1, 1000000)`,
	"waiter heartbeat":  `SELECT * FROM distributed_lock_waiter_heartbeat(ARRAY[1::bigint], 1000000)`,
	"waiter claim":      `SELECT * FROM distributed_lock_waiter_claim('held', 1)`,
	"waiter leave":      `SELECT distributed_lock_waiter_leave('held', 1)`,
	"acquire all":       `SELECT * FROM distributed_lock_acquire_all(ARRAY['held', 'x'], 'x', 60000000)`,
	"enqueue all":       `SELECT * FROM distributed_lock_enqueue_all(ARRAY['held', 'x'], 'x', 60000000, 1000000, 1000000)`,
	"waiter poll all":   `SELECT * FROM distributed_lock_waiter_poll_all(ARRAY['held', 'x'], ARRAY[1, 2]::bigint[], 1000000)`,
	"waiter leave all":  `SELECT distributed_lock_waiter_leave_all(ARRAY['held', 'x'], ARRAY[1, 2]::bigint[])`,
	"renew all":         `SELECT * FROM distributed_lock_renew_all(ARRAY['held'], 'admin-owner', ARRAY[$TOKEN]::bigint[], 60000000)`,
	"release all":       `SELECT * FROM distributed_lock_release_all(ARRAY['held'], 'admin-owner', ARRAY[$TOKEN]::bigint[])`,
	"force expire":      `SELECT * FROM distributed_lock_force_expire('held', $TOKEN)`,
	"force release":     `SELECT * FROM distributed_lock_force_release('held', $TOKEN)`,
	"end delay":         `SELECT * FROM distributed_lock_end_delay('delayed')`,
	"prune":             `SELECT * FROM distributed_lock_prune(0)`,
	"open session":      `SELECT * FROM distributed_lock_open_session('x', 60000000)`,
	"session heartbeat": `SELECT * FROM distributed_lock_session_heartbeat(1, 'x')`,
	"session bind":      `SELECT * FROM distributed_lock_session_bind(1, 'x', 'admin-owner', ARRAY['held'], ARRAY[$TOKEN]::bigint[])`,
	"close session":     `SELECT * FROM distributed_lock_close_session(1, 'x')`,
	"end session":       `SELECT * FROM distributed_lock_end_session(1)`,
	"revoke":            `SELECT * FROM distributed_lock_revoke('held', $TOKEN, 0)`,
	"revoke pending":    `SELECT * FROM distributed_lock_revoke_pending('held', 'admin-owner', $TOKEN)`,
	"session revokes":   `SELECT * FROM distributed_lock_session_revokes(1, 'x')`,
	"next token":        `SELECT distributed_lock_next_token()`,
	"advance epoch":     `SELECT distributed_lock_advance_epoch()`,
	"proclaim":          `SELECT distributed_lock_proclaim('held', 'admin-owner', $TOKEN, '"forged"')`,
	"leader":            `SELECT * FROM distributed_lock_leader('held')`,
	"downgrade":         `SELECT * FROM distributed_lock_downgrade('held', 'admin-owner', $TOKEN, 60000000)`,
	"upgrade":           `SELECT * FROM distributed_lock_upgrade('held', 'admin-owner', $TOKEN, 60000000, 1000000, 1000000, true)`,
	"hold at least":     `SELECT * FROM distributed_lock_hold_at_least('held', 'admin-owner', $TOKEN, 3600000000)`,
}

// forbiddenCalls are the functions each kind may not call.
var forbiddenCalls = map[roles.Kind][]string{
	roles.Viewer: {"acquire", "acquire shared", "enqueue shared", "renew", "release", "fence", "stale write", "enqueue", "waiter poll",
		"waiter claim", "waiter heartbeat", "waiter leave", "acquire all", "enqueue all", "waiter poll all", "waiter leave all",
		"renew all", "release all", "force expire", "force release", "end delay", "prune", "next token", "advance epoch",
		"open session", "session heartbeat", "session bind", "close session", "end session", "proclaim", "revoke",
		"revoke pending", "session revokes", "downgrade", "upgrade", "hold at least"},
	roles.Operator: {"acquire", "acquire shared", "enqueue shared", "renew", "release", "fence", "stale write", "enqueue", "waiter poll",
		"waiter claim", "waiter heartbeat", "waiter leave", "acquire all", "enqueue all", "waiter poll all", "waiter leave all",
		"renew all", "release all", "next token", "advance epoch",
		"open session", "session heartbeat", "session bind", "close session", "proclaim", "revoke pending", "session revokes",
		"downgrade", "upgrade", "hold at least"},
	roles.Service: {"force expire", "force release", "end delay", "prune", "next token", "advance epoch", "end session",
		"revoke"},
}

// stateSQL is everything a forgery could change, as one text, read by the
// admin.
const stateSQL = `
SELECT concat_ws(' | ',
    (SELECT json_agg(l ORDER BY l.lock_key, l.slot)::text FROM distributed_lock l),
    (SELECT json_agg(e ORDER BY e.event_id)::text FROM distributed_lock_event e),
    (SELECT count(*)::text FROM distributed_lock_waiter),
    (SELECT json_agg(s ORDER BY s.session_id)::text FROM distributed_lock_session s),
    (SELECT json_agg(b ORDER BY b.lock_key, b.fence_token)::text FROM distributed_lock_session_lease b),
    (SELECT json_agg(v ORDER BY v.lock_key, v.fence_token)::text FROM distributed_lock_revoke v),
    (SELECT last_value::text FROM distributed_lock_fence_seq),
    (SELECT row_to_json(e)::text FROM distributed_lock_epoch e),
    (SELECT string_agg(md5(p.prosrc), ',' ORDER BY p.proname) FROM pg_proc p
     WHERE p.pronamespace = current_schema()::regnamespace))`

// TestNoRoleCanForge gives each kind of role the wider grants of earlier
// versions, then its grant set, and tries every forgery and every function
// it is not granted, as raw SQL: each is refused with permission denied,
// and the lock tables, the sequence and the functions are unchanged.
func TestNoRoleCanForge(t *testing.T) {
	t.Parallel()
	for _, kind := range roles.Kinds {
		t.Run(string(kind), func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			e := newEnv(t)
			held := makeLocks(t, e)
			db := e.loginRole(t, "lockctl_forger", nil)
			role := db.Config().ConnConfig.User
			s, r := pgx.Identifier{e.schema}.Sanitize(), pgx.Identifier{role}.Sanitize()
			for _, g := range widerGrants {
				if _, err := e.admin.Exec(ctx, fmt.Sprintf(g, s, r)); err != nil {
					t.Fatalf("%s: %v", g, err)
				}
			}
			for _, g := range grantsFor(t, kind, e, role) {
				if _, err := e.admin.Exec(ctx, g); err != nil {
					t.Fatalf("%s: %v", g, err)
				}
			}
			db.Reset()
			var before string
			if err := e.admin.QueryRow(ctx, stateSQL).Scan(&before); err != nil {
				t.Fatal(err)
			}
			for _, f := range forgeries {
				_, err := db.Exec(ctx, f.sql)
				wantDenied(t, f.what, store.Interpret(err))
			}
			for _, name := range forbiddenCalls[kind] {
				_, err := db.Exec(ctx, strings.ReplaceAll(functionCalls[name], "$TOKEN", strconv.FormatInt(held.Token, 10)))
				wantDenied(t, "call "+name, store.Interpret(err))
			}
			var after string
			if err := e.admin.QueryRow(ctx, stateSQL).Scan(&after); err != nil {
				t.Fatal(err)
			}
			if after != before {
				t.Errorf("a %s changed the lock state:\nbefore %s\nafter  %s", kind, before, after)
			}
		})
	}
}

// TestEveryFunctionIsCovered keeps functionCalls in step with the
// functions schema.sql defines and internal/roles grants: a new protocol
// function must be tried here too.
func TestEveryFunctionIsCovered(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := newEnv(t)
	var n int
	if err := e.admin.QueryRow(ctx, `SELECT count(*) FROM pg_proc
		WHERE pronamespace = current_schema()::regnamespace AND prosecdef`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != len(functionCalls) {
		t.Errorf("schema.sql defines %d SECURITY DEFINER functions; this test calls %d", n, len(functionCalls))
	}
}
