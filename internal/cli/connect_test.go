package cli_test

import (
	"strings"
	"testing"

	"github.com/lockctl/lockctl/internal/testdb"
)

// An unreachable server fails fast with exit 1, says so, and never shows the
// password, however the DSN was given. (The console instead starts and shows
// itself reconnecting: tui's TestConsoleStartsWhileDatabaseDown.)
func TestUnreachableNeverShowsPassword(t *testing.T) {
	t.Parallel()
	url, port := closedPortDSN(t, "sekrit")
	keywords := "host=127.0.0.1 port=" + port + " user=app password='sekrit' dbname=app sslmode=disable"
	cases := []struct {
		name string
		env  []string
		args []string
	}{
		{"url", cleanEnv(), []string{"ls", "--dsn", url}},
		{"url json", cleanEnv(), []string{"acquire", "k", "--json", "--dsn", url}},
		{"keywords", cleanEnv(), []string{"expire", "k", "--dsn", keywords}},
		{"DATABASE_URL", cleanEnv("DATABASE_URL=" + url), []string{"migrate"}},
		{"PG variables", cleanEnv("PGHOST=127.0.0.1", "PGPORT="+port, "PGUSER=app", "PGPASSWORD=sekrit", "PGSSLMODE=disable"),
			[]string{"release", "k", "--owner", "a", "--token", "1"}},
		{"wait", cleanEnv(), []string{"acquire", "k", "--wait", "1s", "--dsn", url}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			r := runEnv(t, c.env, c.args...)
			if r.code != 1 || !strings.Contains(r.stderr, "database unreachable") || !strings.Contains(r.stderr, "127.0.0.1:"+port) {
				t.Fatalf("%s\nwant exit 1 saying the database at 127.0.0.1:%s is unreachable", r, port)
			}
			if strings.Contains(r.stdout+r.stderr, "sekrit") {
				t.Fatalf("output shows the password:\n%s", r)
			}
		})
	}
}

// A connection string that does not parse is a usage error, and pgx's
// message about it does not leak the password either.
func TestInvalidDSN(t *testing.T) {
	t.Parallel()
	for _, dsn := range []string{
		"postgres://app:sekrit@127.0.0.1:notaport/app",
		"host=127.0.0.1 password=sekrit port=notaport",
		"postgres://app:sek/rit@127.0.0.1:notaport/app",
	} {
		r := run(t, "ls", "--dsn", dsn)
		if r.code != 2 || !strings.Contains(r.stderr, "invalid connection string") {
			t.Errorf("ls --dsn %s: %s\nwant exit 2, invalid connection string", dsn, r)
		}
		if strings.Contains(r.stdout+r.stderr, "sekrit") || strings.Contains(r.stdout+r.stderr, "rit@") {
			t.Errorf("output shows the password:\n%s", r)
		}
	}
}

// On a database without the lock tables every command says to migrate.
func TestUnmigrated(t *testing.T) {
	t.Parallel()
	d := db{t: t, dsn: testdb.EmptyDSN(t)}
	for _, args := range [][]string{
		{"ls"},
		{"acquire", "k", "--json"},
		{"renew", "k", "--owner", "a", "--token", "1"},
		{"expire", "k"},
		{"prune"},
	} {
		r := d.run(args...)
		if r.code != 1 || !strings.Contains(r.stderr, "run `lockctl migrate`") || r.stdout != "" {
			t.Errorf("lockctl %s on an unmigrated database: %s\nwant exit 1 telling to run lockctl migrate", strings.Join(args, " "), r)
		}
	}
}
