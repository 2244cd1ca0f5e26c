package cli_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/lockctl/lockctl/internal/contexts/contextstest"
)

// contextsEnv writes a contexts file into a fresh config directory and
// returns the environment that points lockctl at it.
func contextsEnv(t *testing.T, file string, mode os.FileMode, extra ...string) []string {
	t.Helper()
	return cleanEnv(append([]string{"XDG_CONFIG_HOME=" + contextstest.ConfigDir(t, file, mode)}, extra...)...)
}

var jsonString = contextstest.Quote

// keysOf is `ls --json`'s keys, as run in env with args.
func keysOf(t *testing.T, env []string, args ...string) string {
	t.Helper()
	r := runEnv(t, env, append([]string{"ls", "--json"}, args...)...)
	if r.code != 0 {
		t.Fatalf("lockctl ls %s: %s", strings.Join(args, " "), r)
	}
	var rows []lsRow
	decode(t, r, &rows)
	var keys []string
	for _, row := range rows {
		keys = append(keys, row.Key)
	}
	return strings.Join(keys, " ")
}

// Two databases, each named by a context: --context picks one, the file's
// default is used when nothing else names a database, and --dsn and
// $DATABASE_URL come before the default.
func TestContextsPickTheDatabase(t *testing.T) {
	t.Parallel()
	staging, prod := newDB(t), newDB(t)
	staging.expect(0, "acquire", "staging:key", "--owner", "a")
	prod.expect(0, "acquire", "prod:key", "--owner", "a")
	env := contextsEnv(t, fmt.Sprintf(`{"default": "staging", "contexts": [
		{"name": "staging", "dsn": %s, "color": "green"},
		{"name": "prod", "dsn": %s, "color": "red"}]}`, jsonString(staging.dsn), jsonString(prod.dsn)), 0o600)

	for _, c := range []struct {
		name string
		env  []string
		args []string
		want string
	}{
		{"--context prod", env, []string{"--context", "prod"}, "prod:key"},
		{"--context staging", env, []string{"--context", "staging"}, "staging:key"},
		{"the default", env, nil, "staging:key"},
		{"--dsn before the default", env, []string{"--dsn", prod.dsn}, "prod:key"},
		{"$DATABASE_URL before the default", append(env[:len(env):len(env)], "DATABASE_URL="+prod.dsn), nil, "prod:key"},
		{"--context before $DATABASE_URL", append(env[:len(env):len(env)], "DATABASE_URL="+prod.dsn), []string{"--context", "staging"}, "staging:key"},
	} {
		if got := keysOf(t, c.env, c.args...); got != c.want {
			t.Errorf("%s: ls lists %q; want %q", c.name, got, c.want)
		}
	}
}

// What the user gets wrong is a usage error (exit 2), before connecting,
// saying what to fix.
func TestContextUsageErrors(t *testing.T) {
	t.Parallel()
	env := contextsEnv(t, `{"contexts": [{"name": "staging", "dsn": "postgres://x@127.0.0.1:1/a"}, {"name": "prod", "dsn": "host=127.0.0.1 port=1"}]}`, 0o600)
	broken := contextsEnv(t, `{"contexts": [{"name": "staging", "dsn": "x", "readonly": true}]}`, 0o600)
	none := cleanEnv("XDG_CONFIG_HOME=" + t.TempDir())
	for _, c := range []struct {
		name string
		env  []string
		args []string
		want []string
	}{
		{"unknown", env, []string{"ls", "--context", "prdo"}, []string{`unknown context "prdo"`, "staging, prod"}},
		{"with --dsn", env, []string{"ls", "--context", "prod", "--dsn", "postgres://x@127.0.0.1:1/a"}, []string{"--context and --dsn are exclusive"}},
		{"no file", none, []string{"ls", "--context", "prod"}, []string{`unknown context "prod"`, "contexts.json does not exist"}},
		{"a broken file", broken, []string{"ls"}, []string{"contexts.json", `unknown field "readonly"`}},
		{"context's unknown command", env, []string{"context", "lss"}, []string{`unknown command "lss"`, "ls"}},
		{"a broken file, context ls", broken, []string{"context", "ls", "--dsn", "postgres://x@127.0.0.1:1/a"}, []string{`unknown field "readonly"`}},
	} {
		r := runEnv(t, c.env, c.args...)
		if r.code != 2 || r.stdout != "" {
			t.Errorf("%s: %s\nwant exit 2", c.name, r)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(r.stderr, w) {
				t.Errorf("%s: stderr %q does not say %q", c.name, r.stderr, w)
			}
		}
	}
	// A broken file is not read when --dsn names the database.
	if r := runEnv(t, broken, "ls", "--dsn", "postgres://x@127.0.0.1:1/a"); r.code != 1 || !strings.Contains(r.stderr, "unreachable") {
		t.Errorf("ls --dsn with a broken contexts file: %s\nwant the connection tried (exit 1, unreachable)", r)
	}
}

// A read-only context runs the commands that change no lock and refuses
// the others before they connect: the lock is untouched.
func TestReadOnlyContextRefusesChanges(t *testing.T) {
	t.Parallel()
	d := newDB(t)
	held := d.json(0, "acquire", "k", "--owner", "a", "--ttl", "1m")
	env := contextsEnv(t, fmt.Sprintf(`{"contexts": [{"name": "prod", "dsn": %s, "read_only": true}]}`, jsonString(d.dsn)), 0o600)
	for _, args := range [][]string{
		{"expire", "k"}, {"force-release", "k"}, {"acquire", "x"}, {"release", "k", "--owner", "a", "--token", tokenArg(held.Token)},
		{"renew", "k", "--owner", "a", "--token", tokenArg(held.Token)}, {"end-delay", "k"}, {"end-session", "1"},
		{"prune"}, {"migrate"}, {"grant", "someone", "--as", "viewer"}, {"run", "k", "--", "true"},
	} {
		r := runEnv(t, env, append([]string{"--context", "prod"}, args...)...)
		if r.code != 2 || !strings.Contains(r.stderr, `context "prod" is read-only`) {
			t.Errorf("lockctl %s under a read-only context: %s\nwant exit 2, refused", strings.Join(args, " "), r)
		}
	}
	rows := lsJSON(t, d)
	if len(rows) != 1 || rows[0].State != "held" || rows[0].Token != held.Token {
		t.Fatalf("after the refused commands the lock is %+v; want it held as before", rows)
	}
	for _, args := range [][]string{{"ls"}, {"events"}, {"sessions"}, {"blocking"}, {"context", "ls"}} {
		if r := runEnv(t, env, append([]string{"--context", "prod"}, args...)...); r.code != 0 {
			t.Errorf("lockctl %s under a read-only context: %s\nwant it to run", strings.Join(args, " "), r)
		}
	}
}

// A context's actor is recorded on its operator actions, unless --actor
// says otherwise.
func TestContextActor(t *testing.T) {
	t.Parallel()
	d := newDB(t)
	env := contextsEnv(t, fmt.Sprintf(`{"contexts": [{"name": "ops", "dsn": %s, "actor": "alice@ops"}]}`, jsonString(d.dsn)), 0o600)
	d.json(0, "acquire", "k1", "--owner", "a")
	d.json(0, "acquire", "k2", "--owner", "a")
	if r := runEnv(t, env, "expire", "k1", "--context", "ops"); r.code != 0 {
		t.Fatal(r)
	}
	if r := runEnv(t, env, "expire", "k2", "--context", "ops", "--actor", "bob@ops"); r.code != 0 {
		t.Fatal(r)
	}
	d.onConn(func(conn *pgx.Conn) {
		if e := lastEvent(t, conn, "k1"); e.Actor != "alice@ops" {
			t.Errorf("k1 expired by %q; want the context's actor alice@ops", e.Actor)
		}
		if e := lastEvent(t, conn, "k2"); e.Actor != "bob@ops" {
			t.Errorf("k2 expired by %q; want --actor's bob@ops", e.Actor)
		}
	})
}

// A context may name a libpq service instead of a DSN: its settings come
// from the service file, as psql reads them.
func TestContextService(t *testing.T) {
	t.Parallel()
	d := newDB(t)
	d.expect(0, "acquire", "via:service", "--owner", "a")
	cfg, err := pgx.ParseConfig(d.dsn)
	if err != nil {
		t.Fatal(err)
	}
	service := filepath.Join(t.TempDir(), "pg_service.conf")
	conf := fmt.Sprintf("[lockctl-test]\nhost=%s\nport=%d\nuser=%s\ndbname=%s\nsearch_path=%s\nsslmode=disable\n",
		cfg.Host, cfg.Port, cfg.User, cfg.Database, cfg.RuntimeParams["search_path"])
	if err := os.WriteFile(service, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	env := contextsEnv(t, `{"contexts": [{"name": "svc", "service": "lockctl-test"}]}`, 0o600, "PGSERVICEFILE="+service)
	if got := keysOf(t, env, "--context", "svc"); got != "via:service" {
		t.Fatalf("ls --context svc lists %q; want via:service", got)
	}
}

// context ls lists the contexts in the file's order, the one in use
// marked, passwords masked; a password in a file others may read is
// refused.
func TestContextList(t *testing.T) {
	t.Parallel()
	file := `{"default": "prod", "contexts": [
		{"name": "staging", "dsn": "postgres://ops:s3cret@staging-db/app", "color": "green"},
		{"name": "prod", "service": "prod-eu", "color": "#ff0000", "read_only": true, "actor": "alice@ops"}]}`
	env := contextsEnv(t, file, 0o600)
	r := runEnv(t, env, "context", "ls")
	if r.code != 0 || strings.Contains(r.stdout, "s3cret") {
		t.Fatalf("context ls: %s\nwant exit 0, no password", r)
	}
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	if len(lines) != 3 || !strings.HasPrefix(lines[0], "CURRENT") ||
		!strings.Contains(lines[1], "staging") || !strings.Contains(lines[1], "postgres://ops:xxxxx@staging-db/app") ||
		!strings.HasPrefix(lines[2], "*") || !strings.Contains(lines[2], "prod (default)") || !strings.Contains(lines[2], "service=prod-eu") {
		t.Fatalf("context ls printed:\n%s", r.stdout)
	}
	r = runEnv(t, env, "context", "ls", "--json", "--context", "staging")
	var rows []map[string]any
	decode(t, r, &rows)
	if len(rows) != 2 || rows[0]["current"] != true || rows[0]["dsn"] != "postgres://ops:xxxxx@staging-db/app" ||
		rows[1]["default"] != true || rows[1]["read_only"] != true || rows[1]["service"] != "prod-eu" {
		t.Fatalf("context ls --json = %v", rows)
	}
	open := contextsEnv(t, file, 0o644)
	if r := runEnv(t, open, "ls", "--context", "staging"); r.code != 2 || !strings.Contains(r.stderr, "readable by others") || strings.Contains(r.stderr, "s3cret") {
		t.Fatalf("a password in a world-readable file: %s\nwant exit 2, refused", r)
	}
	if r := runEnv(t, cleanEnv("XDG_CONFIG_HOME="+t.TempDir()), "context", "ls"); r.code != 0 || !strings.Contains(r.stderr, "no contexts") {
		t.Fatalf("context ls without a file: %s", r)
	}
}

// The shells complete --context with the file's names.
func TestCompleteContext(t *testing.T) {
	t.Parallel()
	env := contextsEnv(t, `{"contexts": [{"name": "staging", "dsn": "x"}, {"name": "prod-eu", "service": "p"}]}`, 0o600)
	if got := strings.Join(completions(t, env, "ls", "--context", ""), " "); got != "staging prod-eu" {
		t.Fatalf("__complete ls --context \"\" = %q; want staging prod-eu", got)
	}
}
