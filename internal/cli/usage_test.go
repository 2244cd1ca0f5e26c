package cli_test

import (
	"net"
	"strings"
	"testing"
)

// closedPortDSN names a port nothing listens on: a command that got past
// its argument checks would fail to connect (exit 1), not exit 2.
func closedPortDSN(t *testing.T, password string) (url string, port string) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	_, port, _ = net.SplitHostPort(l.Addr().String())
	l.Close()
	return "postgres://app:" + password + "@127.0.0.1:" + port + "/app?sslmode=disable", port
}

func TestUsageErrors(t *testing.T) {
	t.Parallel()
	dsn, _ := closedPortDSN(t, "pw")
	long := strings.Repeat("k", 300)
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"frobnicate"}, `unknown command "frobnicate"`},
		{[]string{"--bogus"}, `lockctl: unknown flag --bogus`},
		{[]string{"help", "frobnicate"}, `unknown command "frobnicate"`},
		{[]string{"acquire", "k", "--bogus"}, `lockctl acquire: unknown flag --bogus`},
		{[]string{"acquire", "k", "-x"}, `unknown flag -x`},
		{[]string{"acquire"}, `lockctl acquire: missing KEY`},
		{[]string{"acquire", "a", "b", "a"}, `KEY a is named twice`},
		{[]string{"end-delay", "a", "b"}, `unexpected argument "b"`},
		{[]string{"ls", "extra"}, `unexpected argument "extra"`},
		{[]string{"acquire", "k", "--ttl", "abc"}, `invalid --ttl "abc"`},
		{[]string{"metrics", "--max-prefixes", "0"}, `invalid --max-prefixes 0: must be between 1 and 10000`},
		{[]string{"metrics", "--prefix-separator", ""}, `invalid --prefix-separator ""`},
		{[]string{"acquire", "k", "--ttl", "-1s"}, `invalid --ttl "-1s": must be positive`},
		{[]string{"acquire", "k", "--ttl", "0s"}, `invalid --ttl "0s": must be positive`},
		{[]string{"acquire", "k", "--ttl"}, `flag --ttl needs a value`},
		{[]string{"acquire", "k", "--ttl", "8761h"}, `invalid --ttl "8761h": must be between 1ms and 8760h0m0s`},
		{[]string{"end-delay", "k", "--reason", strings.Repeat("r", 4097)}, `invalid --reason "` + strings.Repeat("r", 64) + `…": too large: reason is 4097 bytes, more than 4096`},
		{[]string{"end-session", "1", "--reason", strings.Repeat("r", 4097)}, `invalid --reason "` + strings.Repeat("r", 64) + `…": too large: reason is 4097 bytes, more than 4096`},
		{[]string{"acquire", "k", "--wait", "soon"}, `invalid --wait "soon"`},
		{[]string{"acquire", "k", "--wait", "-5s"}, `invalid --wait "-5s": must not be negative`},
		{[]string{"acquire", "k", "--owner", ""}, `invalid --owner "": invalid owner id: owner is empty`},
		{[]string{"acquire", "k", "--owner", "*"}, `invalid --owner "*": invalid owner id: an owner id may not be a reserved word ("*")`},
		{[]string{"acquire", long}, `invalid KEY: invalid lock key: key is 300 bytes, more than 255`},
		{[]string{"acquire", "k", "--owner", long}, `invalid --owner`},
		{[]string{"acquire", "k", "--json=maybe"}, `invalid --json "maybe"`},
		{[]string{"renew", "k", "--owner", "a", "--token", "x"}, `invalid --token "x"`},
		{[]string{"renew", "k", "--owner", "a", "--token", "0"}, `invalid --token "0": must be positive`},
		{[]string{"renew", "k", "--owner", "a", "--token", "-3"}, `invalid --token "-3": must be positive`},
		{[]string{"renew", "k", "--owner", "a", "--token", "99999999999999999999"}, `invalid --token "99999999999999999999": too large`},
		{[]string{"renew", "k"}, `lockctl renew: missing --owner and --token`},
		{[]string{"renew", "k", "--token", "5"}, `lockctl renew: missing --owner`},
		{[]string{"release", "k", "--owner", "a"}, `lockctl release: missing --token`},
		{[]string{"release", "--owner", "a", "--token", "1"}, `lockctl release: missing KEY`},
		{[]string{"release", long, "--owner", "a", "--token", "1"}, `invalid KEY`},
		{[]string{"expire", "k", "--token", "x"}, `invalid --token "x"`},
		{[]string{"expire", "k\xff"}, `invalid KEY: invalid lock key: key is not valid UTF-8`},
		{[]string{"prune", "--older", "0"}, `invalid --older 0s: must be positive`},
		{[]string{"prune", "--events-older", "x"}, `invalid --events-older "x"`},
		{[]string{"ls", "--actor", ""}, `invalid --actor`},
		{[]string{"migrate", "now"}, `unexpected argument "now"`},
	}
	for _, c := range cases {
		t.Run(strings.Join(c.args, " "), func(t *testing.T) {
			t.Parallel()
			args := c.args
			if args[0] != "--bogus" && args[0] != "help" && args[0] != "frobnicate" {
				args = append([]string{args[0], "--dsn", dsn}, args[1:]...)
			}
			r := run(t, args...)
			if r.code != 2 || r.stdout != "" || !strings.Contains(r.stderr, c.want) || !strings.Contains(r.stderr, "--help' for usage") {
				t.Fatalf("%s\nwant exit 2, empty stdout, stderr naming %q with a hint to --help", r, c.want)
			}
		})
	}
}

func TestHelp(t *testing.T) {
	t.Parallel()
	top := run(t, "--help")
	if top.code != 0 {
		t.Fatalf("--help: %s", top)
	}
	for _, want := range []string{"lockctl ls [--prefix text] [--state states] [--watch] [--interval duration] [--json]", "lockctl acquire KEY… [--owner id] [--ttl duration] [--wait duration] [--lock-delay duration] [--at-least duration] [--shared] [--permits N] [--key-shared KEY] [--key-permits KEY=N] [--json]",
		"lockctl renew KEY --owner id --token token", "lockctl release KEY", "lockctl expire KEY [--token token]",
		"lockctl migrate", "lockctl prune [--older duration] [--events-older duration]",
		"lockctl run KEY… [--owner id] [--ttl duration] [--wait duration] [--lock-delay duration] [--at-least duration] [--shared] [--permits N] [--grace duration] [--revoke-signal signal] -- CMD ARGS…",
		"--dsn string", "--actor name", "(default \"", "DATABASE_URL", "Exit codes: 0 done, 1 error, 2 usage, 3 held", "5 deadlock", "128+signal a wait interrupted (129 SIGHUP, 130 SIGINT, 143 SIGTERM)"} {
		if !strings.Contains(top.stdout, want) {
			t.Errorf("lockctl --help lacks %q:\n%s", want, top.stdout)
		}
	}
	for _, args := range [][]string{{"acquire", "--help"}, {"acquire", "-h"}, {"help", "acquire"}, {"acquire", "k", "--ttl", "5s", "-h"}} {
		r := run(t, args...)
		if r.code != 0 || r.stderr != "" {
			t.Fatalf("lockctl %s: %s", strings.Join(args, " "), r)
		}
		for _, want := range []string{"Usage: lockctl acquire KEY", "--ttl duration", "(default 30s)", "--wait duration", "--owner id", "--dsn string", "-h, --help"} {
			if !strings.Contains(r.stdout, want) {
				t.Errorf("lockctl %s lacks %q:\n%s", strings.Join(args, " "), want, r.stdout)
			}
		}
	}
	r := run(t, "prune", "--help")
	if !strings.Contains(r.stdout, "--older duration") || !strings.Contains(r.stdout, "(default 24h0m0s)") {
		t.Errorf("prune --help:\n%s", r.stdout)
	}
	// bench's hidden --queue-worker is how it starts its own worker
	// processes: no user should be offered it.
	bench := run(t, "bench", "--help")
	if bench.code != 0 || !strings.Contains(bench.stdout, "--waiters") {
		t.Fatalf("bench --help: %s", bench)
	}
	for what, out := range map[string]string{"lockctl --help": top.stdout, "lockctl bench --help": bench.stdout} {
		if strings.Contains(out, "queue-worker") {
			t.Errorf("%s shows the hidden --queue-worker:\n%s", what, out)
		}
	}
}

// run's command goes after "--"; without it the mistake is named with the
// corrected command line.
func TestRunUsage(t *testing.T) {
	t.Parallel()
	dsn, _ := closedPortDSN(t, "pw")
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"run", "k", "--dsn", dsn}, `lockctl run: missing -- CMD ARGS…`},
		{[]string{"run", "k", "--dsn", dsn, "--"}, `lockctl run: missing -- CMD ARGS…`},
		{[]string{"run", "k", "--dsn", dsn, "make", "deploy"}, `put -- before the command: lockctl run k -- make deploy`},
		{[]string{"run", "--dsn", dsn, "--", "make"}, `lockctl run: missing KEY`},
		{[]string{"run", "k", "--grace", "-1s", "--dsn", dsn, "--", "true"}, `invalid --grace "-1s"`},
	}
	for _, c := range cases {
		r := run(t, c.args...)
		if r.code != 2 || !strings.Contains(r.stderr, c.want) {
			t.Errorf("lockctl %s: %s\nwant exit 2 and %q", strings.Join(c.args, " "), r, c.want)
		}
	}
}
