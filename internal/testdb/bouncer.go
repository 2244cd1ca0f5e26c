package testdb

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/lockctl/lockctl/internal/pgtemp"
)

// Pooled is a fresh, migrated lock namespace reached through a PgBouncer in
// front of the test server.
type Pooled struct {
	// DSN reaches the namespace through the pooler. It carries no
	// search_path (PgBouncer refuses that startup parameter): the
	// namespace's role has it set with ALTER ROLE, the way docs/pooling.md
	// tells operators to choose a lock schema behind a pooler.
	DSN string
	// DirectDSN reaches the same namespace as the same role, bypassing the
	// pooler (for LISTEN, or to compare).
	DirectDSN string
	// Role owns the namespace's schema, which has the same name.
	Role    string
	Bouncer *pgtemp.Bouncer
}

// Bouncer starts a PgBouncer (opts; transaction pooling by default) in front
// of the throwaway server, closed when the test ends, and makes a fresh
// namespace behind it: a login role and a schema of the same name, the
// role's search_path set to that schema, migrated. Without a throwaway server
// (TEST_DATABASE_URL) or a pgbouncer binary the test is Unavailable.
func Bouncer(t testing.TB, opts pgtemp.BouncerOptions) Pooled {
	t.Helper()
	return PooledNamespaces(t, opts, 1, true)[0]
}

// PooledNamespaces is Bouncer with n namespaces behind one pooler; unless
// migrate is set their schemas are empty.
func PooledNamespaces(t testing.TB, opts pgtemp.BouncerOptions, n int, migrate bool) []Pooled {
	t.Helper()
	dsn := base(t)
	if server == nil {
		Unavailable(t, "pooler tests need the throwaway server, not %s", EnvURL)
	}
	if _, err := pgtemp.FindBouncer(); err != nil {
		Unavailable(t, "%v", err)
	}
	ctx := context.Background()
	admin, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatalf("connect to test database: %v", err)
	}
	defer admin.Close(ctx)
	spaces := make([]Pooled, n)
	for i := range spaces {
		name := fmt.Sprintf("p%d_%d", os.Getpid(), schemaSeq.Add(1))
		ident := pgx.Identifier{name}.Sanitize()
		for _, stmt := range []string{
			"CREATE ROLE " + ident + " LOGIN",
			"CREATE SCHEMA " + ident + " AUTHORIZATION " + ident,
			"ALTER ROLE " + ident + " SET search_path = " + ident,
		} {
			if _, err := admin.Exec(ctx, stmt); err != nil {
				t.Fatalf("%s: %v", stmt, err)
			}
		}
		spaces[i] = Pooled{Role: name, DirectDSN: asUser(t, dsn, name)}
		if migrate {
			migrateAs(t, spaces[i].DirectDSN)
		}
		opts.Users = append(opts.Users, name)
	}
	b, err := pgtemp.StartBouncer(ctx, server, opts)
	if err != nil {
		t.Fatalf("start pgbouncer: %v", err)
	}
	t.Cleanup(func() { _ = b.Close() })
	logOnFailure(t, b)
	for i := range spaces {
		spaces[i].DSN, spaces[i].Bouncer = asUser(t, b.DSN(""), spaces[i].Role), b
	}
	return spaces
}

// asUser returns the URL dsn with its user replaced.
func asUser(t testing.TB, dsn, user string) string {
	t.Helper()
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatalf("parse %q: %v", dsn, err)
	}
	u.User = url.User(user)
	return u.String()
}

// SessionDSN starts a second PgBouncer in front of the same server, in
// session mode, closed when the test ends, and returns a URL to p's
// namespace through it: where a Notifier may LISTEN.
func (p Pooled) SessionDSN(t testing.TB) string {
	t.Helper()
	b, err := pgtemp.StartBouncer(context.Background(), server, pgtemp.BouncerOptions{PoolMode: "session", Users: []string{p.Role}})
	if err != nil {
		t.Fatalf("start pgbouncer: %v", err)
	}
	t.Cleanup(func() { _ = b.Close() })
	logOnFailure(t, b)
	return asUser(t, b.DSN(""), p.Role)
}

// logOnFailure shows the end of b's log when the test fails (before b is
// closed and its directory removed): whether the pooler was up, and what
// it refused.
func logOnFailure(t testing.TB, b *pgtemp.Bouncer) {
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		log, err := os.ReadFile(b.LogPath())
		if err != nil {
			t.Logf("pgbouncer log: %v", err)
			return
		}
		lines := strings.Split(strings.TrimRight(string(log), "\n"), "\n")
		t.Logf("pgbouncer (pid alive: %v), last lines of its log:\n%s", b.Running(), strings.Join(lines[max(0, len(lines)-30):], "\n"))
	})
}
