// Package roles holds the least-privilege grants for lockctl's three kinds
// of database user, as SQL a DBA runs once per role:
//
//   - Viewer watches: it reads the three tables and nothing else (the
//     console with --read-only, `lockctl ls`).
//   - Operator frees stuck locks: a viewer that may also force-expire and
//     force-release (UPDATE of expires_at and released_at only, plus the audit
//     event) and prune (DELETE of free rows, dead waiters and old events).
//   - Service is what an application embedding locker needs: acquire, wait,
//     renew, keepalive, release, fence and report stale writes. No DDL, no
//     DELETE of history, no other table.
//
// The sets were found by testing each locker and store operation as a real
// LOGIN role (roles_test.go): removing any line below makes one of them fail
// with store.ErrPermissionDenied. Two things need no grant: the identity
// sequences behind event_id and waiter_id (an identity column's sequence is
// used with the table's INSERT privilege), and LISTEN/NOTIFY and advisory
// locks, which are open to every role.
//
// Identifiers are never spliced in raw: schema and role names are quoted with
// pgx.Identifier.Sanitize, so any name is safe to pass.
package roles

import (
	"fmt"
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
	viewerGrants = []string{
		`GRANT USAGE ON SCHEMA %[1]s TO %[2]s`,
		`GRANT SELECT ON %[1]s.distributed_lock, %[1]s.distributed_lock_event, %[1]s.distributed_lock_waiter TO %[2]s`,
	}

	// operatorGrants: force-expire/force-release update two columns and log
	// an event (their NOTIFY of waiters reads wake_until: SELECT); prune deletes free rows, dead waiter records and, with
	// --events-older, old events.
	operatorGrants = append(append([]string{}, viewerGrants...),
		`GRANT UPDATE (expires_at, released_at) ON %[1]s.distributed_lock TO %[2]s`,
		`GRANT INSERT ON %[1]s.distributed_lock_event TO %[2]s`,
		`GRANT DELETE ON %[1]s.distributed_lock, %[1]s.distributed_lock_waiter, %[1]s.distributed_lock_event TO %[2]s`,
	)

	// serviceGrants: a grant is an INSERT … ON CONFLICT DO UPDATE … RETURNING
	// (INSERT, UPDATE, SELECT) that draws a token (USAGE on the sequence) and
	// logs an event (INSERT); Fence's FOR SHARE needs UPDATE too; a waiting
	// Acquire keeps a waiter record (INSERT, UPDATE, DELETE, SELECT) and
	// sets wake_until on the lock row (UPDATE).
	serviceGrants = []string{
		`GRANT USAGE ON SCHEMA %[1]s TO %[2]s`,
		`GRANT SELECT, INSERT, UPDATE ON %[1]s.distributed_lock TO %[2]s`,
		`GRANT INSERT ON %[1]s.distributed_lock_event TO %[2]s`,
		`GRANT SELECT, INSERT, UPDATE, DELETE ON %[1]s.distributed_lock_waiter TO %[2]s`,
		`GRANT USAGE ON SEQUENCE %[1]s.distributed_lock_fence_seq TO %[2]s`,
	}
)

// Statements returns the GRANT statements of kind for role on the lock
// tables in schema, one per element, for running them one by one.
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
