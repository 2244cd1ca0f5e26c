// Package roles holds the least-privilege grants for lockctl's three kinds
// of database user, as SQL a DBA runs once per role (or `lockctl grant`
// runs):
//
//   - Viewer watches: it reads the lock tables and nothing else (the
//     console with --read-only, `lockctl ls`).
//   - Operator frees stuck locks: a viewer that may also call the force and
//     prune functions (force-expire, force-release, revoke, end a delay, end a
//     session, prune).
//   - Service is what an application embedding locker needs: the owner's
//     protocol functions (acquire, renew, release, fence, report a stale
//     write, the waiter bookkeeping of a waiting Acquire, the same for a
//     set of keys, and its own sessions: open, heartbeat, bind, close) and a read of the lock table (Locker.Get, and the
//     current holder a lost lease's ErrNotHeld error names).
//
// No kind gets INSERT, UPDATE, DELETE or TRUNCATE on any lock table, or any
// privilege on the token sequence: every write goes through the SECURITY
// DEFINER functions of schema.sql, which run as the role that migrated. So
// no role can forge or rewind a token, revive a lease, change an owner, or
// write or delete an event except as the protocol does. Each set starts by
// revoking whatever the role held on the lock tables, the sequence and
// the callable protocol functions, so granting also takes back a wider set
// granted before (another kind, or an earlier version of lockctl).
//
// The sets were found by testing each locker operation as a real LOGIN role
// (roles_test.go, service_test.go, operator_test.go): removing any line
// makes one of them fail, and every forbidden write is refused.
// LISTEN/NOTIFY needs no grant (it is open to every role).
//
// Identifiers are never spliced in raw: schema and role names are quoted with
// pgx.Identifier.Sanitize, so any name is safe to pass.
package roles

import (
	"fmt"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"
)

// Kind is one of the three grant sets.
type Kind string

const (
	Viewer   Kind = "viewer"
	Operator Kind = "operator"
	Service  Kind = "service"
)

// Kinds lists every grant set, for documentation and tests.
var Kinds = []Kind{Viewer, Operator, Service}

// The grant templates, one statement each. %[1]s is the quoted schema,
// %[2]s the quoted role; nothing else is ever substituted.
var (
	// revokeAll takes back every privilege the role holds on the objects a
	// grant set can reach: the lock tables, the token sequence and
	// every function a set grants. So on those objects a role has exactly
	// the set that follows, whatever it had before. It leaves alone what no
	// set ever grants and the schema already closes to PUBLIC: the epoch
	// table, the internal functions and the rules no reader uses
	// (store/sql/functions); a privilege a DBA gave on those by hand stays.
	revokeAll = []string{
		`REVOKE ALL ON %[1]s.distributed_lock, %[1]s.distributed_lock_state, %[1]s.distributed_lock_event, %[1]s.distributed_lock_waiter, %[1]s.distributed_lock_session, %[1]s.distributed_lock_session_lease, %[1]s.distributed_lock_revoke, %[1]s.distributed_lock_fence_seq FROM %[2]s`,
		`REVOKE ALL ON FUNCTION ` + strings.Join(qualified(slices.Concat(ownerFunctions, operatorFunctions, readerRules)), ", ") + ` FROM %[2]s`,
	}

	// readGrants let a role read the keys as the protocol's rules judge
	// them: the readers' view and the rules it, and the readers beside it,
	// use (a view's functions run as its reader).
	readGrants = []string{
		`GRANT SELECT ON %[1]s.distributed_lock, %[1]s.distributed_lock_state TO %[2]s`,
		`GRANT EXECUTE ON FUNCTION ` + strings.Join(qualified(slices.Concat(readerRules, readerFunctions)), ", ") + ` TO %[2]s`,
	}

	viewerGrants = slices.Concat(revokeAll, []string{
		`GRANT USAGE ON SCHEMA %[1]s TO %[2]s`,
		`GRANT SELECT ON %[1]s.distributed_lock_event, %[1]s.distributed_lock_waiter, %[1]s.distributed_lock_session, %[1]s.distributed_lock_session_lease, %[1]s.distributed_lock_revoke TO %[2]s`,
	}, readGrants)

	operatorGrants = slices.Concat(viewerGrants, []string{
		`GRANT EXECUTE ON FUNCTION ` + strings.Join(qualified(operatorFunctions), ", ") + ` TO %[2]s`,
	})

	// A service reads the keys too: Locker.Get, and the current holder a
	// lost lease's NotHeldError names.
	serviceGrants = slices.Concat(revokeAll, []string{
		`GRANT USAGE ON SCHEMA %[1]s TO %[2]s`,
		`GRANT EXECUTE ON FUNCTION ` + strings.Join(qualified(ownerFunctions), ", ") + ` TO %[2]s`,
	}, readGrants)
)

// ownerFunctions are the protocol functions of schema.sql a lock's owner
// calls, with their argument types (a function is named by its signature).
var ownerFunctions = []string{
	"distributed_lock_acquire(text, text, bigint, jsonb, text, jsonb, boolean, bigint)",
	"distributed_lock_acquire_shared(text, text, bigint, integer, jsonb, text, jsonb, boolean)",
	"distributed_lock_enqueue_shared(text, text, bigint, integer, bigint, bigint, jsonb, text, jsonb, boolean, text, boolean)",
	"distributed_lock_renew(text, text, bigint, bigint)",
	"distributed_lock_release(text, text, bigint, boolean, boolean, text)",
	"distributed_lock_fence(text, text, bigint)",
	"distributed_lock_report_stale_write(text, text, bigint, text, jsonb)",
	"distributed_lock_enqueue(text, text, bigint, bigint, bigint, jsonb, text, jsonb, boolean, bigint, text)",
	"distributed_lock_waiter_poll(text, bigint, bigint)",
	"distributed_lock_waiter_claim(text, bigint)",
	"distributed_lock_waiter_heartbeat(bigint[], bigint)",
	"distributed_lock_waiter_leave(text, bigint, boolean, text)",
	"distributed_lock_acquire_all(text[], text, bigint, jsonb, text, jsonb, boolean, bigint, text[], integer[])",
	"distributed_lock_enqueue_all(text[], text, bigint, bigint, bigint, jsonb, text, jsonb, boolean, bigint, text, text[], integer[])",
	"distributed_lock_waiter_poll_all(text[], bigint[], bigint)",
	"distributed_lock_waiter_leave_all(text[], bigint[], boolean, text)",
	"distributed_lock_renew_all(text[], text, bigint[], bigint)",
	"distributed_lock_release_all(text[], text, bigint[], boolean, boolean, text)",
	"distributed_lock_open_session(text, bigint, text, integer, jsonb)",
	"distributed_lock_session_heartbeat(bigint, text, text[], bigint[], text[], bigint[])",
	"distributed_lock_session_bind(bigint, text, text, text[], bigint[])",
	"distributed_lock_close_session(bigint, text, boolean, text)",
	"distributed_lock_proclaim(text, text, bigint, jsonb)",
	"distributed_lock_revoke_pending(text, text, bigint)",
	"distributed_lock_session_revokes(bigint, text)",
	"distributed_lock_downgrade(text, text, bigint, bigint, text)",
	"distributed_lock_upgrade(text, text, bigint, bigint, bigint, bigint, boolean, text, text)",
	"distributed_lock_hold_at_least(text, text, bigint, bigint)",
}

// readerFunctions are the protocol functions of schema.sql that only read,
// granted to every set.
var readerFunctions = []string{
	"distributed_lock_leader(text)",
}

// readerRules are the rules the readers' view distributed_lock_state and
// the readers beside it (lockview, store.ListSessions) use: pure
// functions, inlined into the reader's statement.
var readerRules = []string{
	"distributed_lock_live(distributed_lock, timestamptz)",
	"distributed_lock_open(distributed_lock, timestamptz)",
	"distributed_lock_is_group(distributed_lock)",
	"distributed_lock_delay_end(distributed_lock)",
	"distributed_lock_delayed(distributed_lock, timestamptz)",
	"distributed_lock_holders_end(text)",
	"distributed_lock_lease_end(distributed_lock)",
	"distributed_lock_live_holders(text, timestamptz)",
	"distributed_lock_kept(distributed_lock, timestamptz)",
	"distributed_lock_key_state(distributed_lock, timestamptz)",
}

// operatorFunctions are the protocol functions of schema.sql that act on
// other owners' locks.
var operatorFunctions = []string{
	"distributed_lock_force_expire(text, bigint, text, text)",
	"distributed_lock_force_release(text, bigint, text, text)",
	"distributed_lock_end_delay(text, text, text)",
	"distributed_lock_prune(bigint, bigint, bigint)",
	"distributed_lock_end_session(bigint, text, text)",
	"distributed_lock_revoke(text, bigint, bigint, text, text)",
}

// qualified prefixes each function with the schema placeholder.
func qualified(fns []string) []string {
	out := make([]string, len(fns))
	for i, f := range fns {
		out[i] = "%[1]s." + f
	}
	return out
}

// Statements returns kind's set for role on the lock objects in schema, one
// statement per element, for running them one by one: the REVOKEs that
// clear what the role held, then the GRANTs.
func Statements(kind Kind, schema, role string) ([]string, error) {
	tmpl, err := template(kind)
	if err != nil {
		return nil, err
	}
	if schema == "" || role == "" {
		return nil, fmt.Errorf("roles: schema and role must not be empty")
	}
	s, r := pgx.Identifier{schema}.Sanitize(), pgx.Identifier{role}.Sanitize()
	out := make([]string, len(tmpl))
	for i, t := range tmpl {
		out[i] = fmt.Sprintf(t, s, r)
	}
	return out, nil
}

// GrantSQL is Statements as a script, one statement per line, to print for
// a DBA (`psql -f`).
func GrantSQL(kind Kind, schema, role string) (string, error) {
	stmts, err := Statements(kind, schema, role)
	if err != nil {
		return "", err
	}
	return strings.Join(stmts, ";\n") + ";\n", nil
}

func template(kind Kind) ([]string, error) {
	switch kind {
	case Viewer:
		return viewerGrants, nil
	case Operator:
		return operatorGrants, nil
	case Service:
		return serviceGrants, nil
	}
	return nil, fmt.Errorf("roles: unknown kind %q (want viewer, operator or service)", kind)
}
