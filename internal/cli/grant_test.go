package cli_test

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/lockctl/lockctl/internal/roles"
	"github.com/lockctl/lockctl/internal/testdb"
)

var grantRoleSeq atomic.Int64

// loginRole creates a LOGIN role with no privileges (dropped at cleanup) and
// returns its name and a DSN that connects as it to d's schema.
func (d db) loginRole(prefix string) (string, string) {
	d.t.Helper()
	ctx := context.Background()
	admin := testdb.Pool(d.t, d.dsn)
	name := fmt.Sprintf("%s_%d_%d", prefix, os.Getpid(), grantRoleSeq.Add(1))
	quoted := pgx.Identifier{name}.Sanitize()
	if _, err := admin.Exec(ctx, "CREATE ROLE "+quoted+" LOGIN"); err != nil {
		d.t.Fatal(err)
	}
	d.t.Cleanup(func() {
		ctx := context.Background()
		_, _ = admin.Exec(ctx, "DROP OWNED BY "+quoted)
		_, _ = admin.Exec(ctx, "DROP ROLE "+quoted)
	})
	u, err := url.Parse(d.dsn)
	if err != nil || u.Scheme == "" {
		d.t.Fatalf("test DSN is not a URL: %q (%v)", d.dsn, err)
	}
	u.User = url.User(name)
	return name, u.String()
}

// as runs lockctl with args against d's schema, connected as dsn's role.
func (d db) as(dsn string, want int, args ...string) result {
	d.t.Helper()
	r := run(d.t, append(args, "--dsn", dsn)...)
	if r.code != want {
		d.t.Fatalf("lockctl %s as %s: %s\nwant exit %d", strings.Join(args, " "), dsn, r, want)
	}
	return r
}

// A service role granted by `lockctl grant` holds locks through the CLI
// and cannot force-release; an operator role force-releases under its
// --actor and cannot hold; a viewer lists and cannot write. Granting again
// with another set leaves only that set.
func TestGrantRolesThroughTheCLI(t *testing.T) {
	t.Parallel()
	d := newDB(t)
	svc, svcDSN := d.loginRole("cli_service")
	op, opDSN := d.loginRole("cli_operator")
	viewer, viewerDSN := d.loginRole("cli_viewer")

	// Before the grant the role can do nothing.
	if r := d.as(svcDSN, 1, "acquire", "k", "--owner", "svc"); !strings.Contains(r.stderr, "permission denied") &&
		!strings.Contains(r.stderr, "lock tables missing") {
		t.Fatalf("acquire before any grant: %s", r)
	}

	for role, kind := range map[string]string{svc: "service", op: "operator", viewer: "viewer"} {
		r := d.expect(0, "grant", role, "--as", kind)
		if !strings.Contains(r.stdout, "granted "+kind+" to "+role) {
			t.Fatalf("grant output: %s", r)
		}
	}

	var lease jsonResult
	decode(t, d.as(svcDSN, 0, "acquire", "k", "--owner", "svc", "--json"), &lease)
	if lease.Outcome != "acquired" {
		t.Fatalf("service acquire = %+v", lease)
	}
	d.as(svcDSN, 0, "renew", "k", "--owner", "svc", "--token", tokenArg(lease.Token))
	if r := d.as(svcDSN, 1, "force-release", "k", "--token", tokenArg(lease.Token)); !strings.Contains(r.stderr, "permission denied") {
		t.Fatalf("service force-release: %s; want permission denied", r)
	}
	if r := d.as(svcDSN, 1, "prune"); !strings.Contains(r.stderr, "permission denied") {
		t.Fatalf("service prune: %s; want permission denied", r)
	}

	if r := d.as(opDSN, 1, "acquire", "other", "--owner", "oncall"); !strings.Contains(r.stderr, "permission denied") {
		t.Fatalf("operator acquire: %s; want permission denied", r)
	}
	var freed jsonResult
	decode(t, d.as(opDSN, 0, "force-release", "k", "--token", tokenArg(lease.Token), "--actor", "oncall@ops", "--json"), &freed)
	if freed.Outcome != "force_released" || freed.Actor != "oncall@ops" || freed.Owner != "svc" {
		t.Fatalf("operator force-release = %+v; want force_released of svc's lease by oncall@ops", freed)
	}
	d.as(opDSN, 0, "prune", "--older", "1ms")

	if r := d.as(viewerDSN, 0, "ls"); r.stdout == "" {
		t.Fatalf("viewer ls printed nothing: %s", r)
	}
	if r := d.as(viewerDSN, 1, "acquire", "k", "--owner", "v"); !strings.Contains(r.stderr, "permission denied") {
		t.Fatalf("viewer acquire: %s; want permission denied", r)
	}

	if r := d.expect(1, "grant", "no_such_role_for_lockctl", "--as", "viewer"); !strings.Contains(r.stderr, `role "no_such_role_for_lockctl" does not exist`) {
		t.Fatalf("grant to a missing role: %s", r)
	}

	// Granted again as a viewer, the service loses its EXECUTE grants.
	d.expect(0, "grant", svc, "--as", "viewer")
	if r := d.as(svcDSN, 1, "acquire", "k", "--owner", "svc"); !strings.Contains(r.stderr, "permission denied") {
		t.Fatalf("acquire after regranting as viewer: %s; want permission denied", r)
	}
}

// --print shows exactly what roles.GrantSQL makes, without connecting; bad
// kinds and names are usage errors.
func TestGrantPrint(t *testing.T) {
	t.Parallel()
	r := run(t, "grant", "lockctl_service", "--as", "service", "--print", "--dsn", "postgres://nobody@127.0.0.1:1/none")
	want, err := roles.GrantSQL(roles.Service, "public", "lockctl_service")
	if err != nil {
		t.Fatal(err)
	}
	if r.code != 0 || r.stdout != want {
		t.Fatalf("grant --print: %s\nwant stdout:\n%s", r, want)
	}
	r = run(t, "grant", `we"ird`, "--as", "viewer", "--schema", "locks", "--print")
	if r.code != 0 || !strings.Contains(r.stdout, `GRANT USAGE ON SCHEMA "locks" TO "we""ird";`) {
		t.Fatalf("grant --print with --schema: %s", r)
	}
	r = run(t, "grant", "r", "--as", "admin", "--print")
	if r.code != 2 || r.stdout != "" || !strings.Contains(r.stderr, `invalid --as "admin": must be one of viewer, operator, service`) {
		t.Errorf("grant --as admin: %s\nwant exit 2 naming the grant sets", r)
	}
	for _, args := range [][]string{
		{"grant", "r", "--print"},
		{"grant", "", "--as", "viewer", "--print"},
		{"grant", strings.Repeat("r", 64), "--as", "viewer", "--print"},
		{"grant", "r\x1b[2J", "--as", "viewer", "--print"},
	} {
		if r := run(t, args...); r.code != 2 || r.stdout != "" {
			t.Errorf("lockctl %q: %s\nwant exit 2 and nothing on stdout", args, r)
		}
	}
}

// Migrate and grant refuse a lock schema another role may create objects
// in (exit 1), naming the role and the REVOKE to run, and grant nothing.
func TestGrantAndMigrateRefuseAnOpenLockSchema(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d := newDB(t)
	creator, _ := d.loginRole("cli_creator")
	svc, svcDSN := d.loginRole("cli_service")
	admin := testdb.Pool(t, d.dsn)
	var schema string
	if err := admin.QueryRow(ctx, `SELECT current_schema()`).Scan(&schema); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.Exec(ctx, "GRANT CREATE ON SCHEMA "+schema+" TO "+creator); err != nil {
		t.Fatal(err)
	}
	revoke := "REVOKE CREATE ON SCHEMA " + schema + " FROM " + creator
	for _, args := range [][]string{{"migrate"}, {"grant", svc, "--as", "service"}} {
		if r := d.expect(1, args...); !strings.Contains(r.stderr, "the lock schema is open to other roles") ||
			!strings.Contains(r.stderr, revoke) {
			t.Errorf("lockctl %s: %s\nwant the refusal, saying: %s", strings.Join(args, " "), r, revoke)
		}
	}
	if r := d.as(svcDSN, 1, "acquire", "k", "--owner", "svc"); !strings.Contains(r.stderr, "permission denied") &&
		!strings.Contains(r.stderr, "lock tables missing") {
		t.Fatalf("acquire after the refused grant: %s; want it refused", r)
	}
	if _, err := admin.Exec(ctx, revoke); err != nil {
		t.Fatal(err)
	}
	d.expect(0, "grant", svc, "--as", "service")
}
