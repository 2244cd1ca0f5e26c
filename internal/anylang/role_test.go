package anylang

import (
	"context"
	"fmt"
	"os"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/lockctl/lockctl/internal/roles"
	"github.com/lockctl/lockctl/internal/testdb"
)

var roleSeq atomic.Int64

// serviceRole creates a LOGIN role with exactly `lockctl grant ROLE --as
// service` on the schema dsn points at, plus extra statements (%s is the
// quoted role), so the clients in other languages run with what the README
// tells a service to get: EXECUTE on the owner functions, no table writes.
// It returns the role's name; the role is dropped when the test ends.
func serviceRole(t *testing.T, admin *pgxpool.Pool, dsn string, extra ...string) string {
	t.Helper()
	ctx := context.Background()
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		t.Fatal(err)
	}
	schema := cfg.RuntimeParams["search_path"]
	if schema == "" {
		t.Fatalf("the test DSN names no schema (search_path)")
	}
	name := fmt.Sprintf("anylang_service_%d_%d", os.Getpid(), roleSeq.Add(1))
	quoted := pgx.Identifier{name}.Sanitize()
	if _, err := admin.Exec(ctx, "CREATE ROLE "+quoted+" LOGIN"); err != nil {
		t.Fatalf("create role: %v", err)
	}
	t.Cleanup(func() {
		ctx := context.Background()
		_, _ = admin.Exec(ctx, "DROP OWNED BY "+quoted)
		_, _ = admin.Exec(ctx, "DROP ROLE "+quoted)
	})
	grants, err := roles.Statements(roles.Service, schema, name)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range extra {
		grants = append(grants, fmt.Sprintf(e, quoted))
	}
	for _, g := range grants {
		if _, err := admin.Exec(ctx, g); err != nil {
			t.Fatalf("%s: %v", g, err)
		}
	}
	return name
}

// javaAsService is the Java client compiled, an admin pool on a fresh
// schema, and the JDBC URL of a service role on it (serviceRole): what a
// test of one Java client against the admin's view needs.
func javaAsService(t *testing.T) (javaClient, *pgxpool.Pool, string) {
	t.Helper()
	client := compileJava(t)
	dsn := testdb.DSN(t)
	pool := testdb.Pool(t, dsn)
	jdbc, err := jdbcURL(dsn, serviceRole(t, pool, dsn))
	if err != nil {
		t.Fatal(err)
	}
	return client, pool, jdbc
}
