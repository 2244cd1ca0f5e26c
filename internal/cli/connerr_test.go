package cli_test

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/lockctl/lockctl/internal/pgtemp"
	"github.com/lockctl/lockctl/internal/testdb"
)

// passwordServer starts a PostgreSQL that asks role app for its password
// (the shared test server trusts everyone) and returns its port.
func passwordServer(t *testing.T) string {
	t.Helper()
	// Not t.TempDir(): its parent is private to this user, and as root the
	// server runs as postgres, which must read the file.
	dir, err := os.MkdirTemp("", "lockctl-hba-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	hba := filepath.Join(dir, "pg_hba.conf")
	rules := "local all all trust\nhost all postgres 127.0.0.1/32 trust\nhost all all 127.0.0.1/32 scram-sha-256\n"
	if err := os.WriteFile(hba, []byte(rules), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	srv, err := pgtemp.Start(ctx, pgtemp.Options{Fast: true, Settings: map[string]string{"hba_file": hba}})
	if err != nil {
		testdb.Unavailable(t, "no PostgreSQL: %v", err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	conn, err := pgx.Connect(ctx, srv.DSN(""))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, `CREATE ROLE app LOGIN PASSWORD 'right-one'`); err != nil {
		t.Fatal(err)
	}
	u, _ := strings.CutPrefix(srv.DSN(""), "postgres://postgres@127.0.0.1:")
	port, _, _ := strings.Cut(u, "/")
	return port
}

// A failed connection is told in one readable line (what failed, where,
// as whom), then a hint, then the driver's words, one part a line; never
// the password, never pgconn's "\n\t" as literal characters.
func TestConnectErrorsAreReadable(t *testing.T) {
	t.Parallel()
	port := passwordServer(t)
	dsn := func(password, db string) string {
		return "postgres://app:" + password + "@127.0.0.1:" + port + "/" + db + "?sslmode=disable"
	}
	at := regexp.QuoteMeta("cannot connect to PostgreSQL at 127.0.0.1:" + port)
	cases := []struct {
		name  string
		env   []string
		args  []string
		first string // the first line of stderr, a regexp
		hint  string
	}{
		{"wrong password", cleanEnv(), []string{"ls", "--dsn", dsn("sekrit", "postgres")},
			`^lockctl ls: ` + at + `, database postgres, user app: password authentication failed for user "app"$`,
			"hint: check the password"},
		{"wrong password from PGPASSWORD", cleanEnv("PGHOST=127.0.0.1", "PGPORT="+port, "PGUSER=app", "PGPASSWORD=sekrit", "PGDATABASE=postgres", "PGSSLMODE=disable"),
			[]string{"acquire", "k"},
			`^lockctl acquire: ` + at + `, database postgres, user app: password authentication failed for user "app"$`,
			"hint: no --dsn or $DATABASE_URL was given, so the connection came from PGHOST, PGPORT, PGDATABASE, PGUSER, PGPASSWORD"},
		{"missing database", cleanEnv("DATABASE_URL=" + dsn("right-one", "nope")), []string{"migrate"},
			`^lockctl migrate: ` + at + `, database nope, user app: database "nope" does not exist$`,
			"hint: name an existing database in the DSN, or create it"},
		{"no server on the socket", cleanEnv("PGHOST=" + t.TempDir()), []string{"ls"},
			`^lockctl ls: cannot connect to PostgreSQL at the socket /\S+/.s.PGSQL.5432, database \S+, user \S+: database unreachable: no server is listening there$`,
			"hint: no --dsn or $DATABASE_URL was given, so the connection came from PGHOST"},
		{"every host of a multi-host DSN", cleanEnv(), []string{"ls", "--dsn", "postgres://app@127.0.0.1:1,127.0.0.1:2/postgres"},
			`^lockctl ls: cannot connect to PostgreSQL at 127\.0\.0\.1:1,127\.0\.0\.1:2, database postgres, user app: database unreachable: no server is listening there$`,
			"hint: is PostgreSQL running"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := runEnv(t, c.env, c.args...)
			lines := strings.Split(strings.TrimSpace(r.stderr), "\n")
			if r.code != 1 || !regexp.MustCompile(c.first).MatchString(lines[0]) {
				t.Fatalf("%s\nwant exit 1 and a first line matching %s", r, c.first)
			}
			if len(lines) < 3 || !strings.HasPrefix(lines[1], "  "+c.hint) || !strings.HasPrefix(lines[2], "  detail: ") {
				t.Fatalf("%s\nwant the hint %q on line 2 and the driver's detail after", r, c.hint)
			}
			if strings.Contains(r.stderr, "sekrit") || strings.Contains(r.stderr, `\n`) || strings.Contains(r.stderr, `\t`) {
				t.Fatalf("stderr shows the password or an escaped newline or tab:\n%s", r.stderr)
			}
		})
	}
	// With the right password the login succeeds: the errors above were
	// about the password and the database.
	r := runEnv(t, cleanEnv(), "ls", "--dsn", dsn("right-one", "postgres"))
	if strings.Contains(r.stderr, "cannot connect") {
		t.Fatalf("ls with the right password: %s", r)
	}
}
