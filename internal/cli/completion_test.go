package cli_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lockctl/lockctl/internal/testdb"
	"github.com/lockctl/lockctl/store"
)

// completionCases are command lines being typed (a trailing space: a new
// word) and what completion must offer for the last word.
var completionCases = []struct {
	line string
	want []string
}{
	{"lockctl ac", []string{"acquire"}},
	{"lockctl --dsn postgres://x r", []string{"release", "renew", "revoke", "run"}},
	{"lockctl comp", []string{"completion"}},
	{"lockctl completion ", []string{"bash", "fish", "powershell", "zsh"}},
	{"lockctl run k --gr", []string{"--grace"}},
	{"lockctl acquire k --ow", []string{"--owner"}},
	{"lockctl help rel", []string{"release"}},
	{"lockctl bench --qu", nil}, // --queue-worker is hidden
	{"lockctl grant r --as ", []string{"operator", "service", "viewer"}},
	{"lockctl ls --state ", []string{"delayed", "expired", "expiring", "free", "held", "kept"}},
}

func requireShell(t *testing.T, shell string) {
	t.Helper()
	if _, err := exec.LookPath(shell); err != nil {
		testdb.Unavailable(t, "%s not installed", shell)
	}
}

// completionEnv runs the shells with lockctl on PATH, as a user's shell
// finds it: the scripts call it by the name typed.
func completionEnv(extra ...string) []string {
	env := cleanEnv(extra...)
	env[0] = "PATH=" + filepath.Dir(binary) + string(os.PathListSeparator) + os.Getenv("PATH")
	return env
}

// bashProg sources `lockctl completion bash` and runs its function for
// $LINE as bash does on TAB, printing COMPREPLY.
// compopt, which sets options of a completion in progress, is a no-op here.
const bashProg = `source <(lockctl completion bash) || exit 9
compopt() { :; }
[[ "$(complete -p lockctl)" == *"-F __start_lockctl"* ]] || { echo "not registered: $(complete -p lockctl)"; exit 8; }
COMP_LINE="$LINE"; COMP_POINT=${#LINE}; COMP_TYPE=9
read -ra COMP_WORDS <<< "$LINE"
[[ "$LINE" == *" " ]] && COMP_WORDS+=("")
COMP_CWORD=$(( ${#COMP_WORDS[@]} - 1 ))
__start_lockctl
printf '%s\n' "${COMPREPLY[@]}"`

// zshProg sources `lockctl completion zsh` after compinit, checks it is
// registered for lockctl, and runs its function for $LINE. Outside a
// completion widget zsh's _describe and _arguments cannot add matches:
// these stand-ins print what the function hands them.
const zshProg = `autoload -U compinit && compinit -u -D
source <(lockctl completion zsh) || exit 9
[[ "${_comps[lockctl]}" == "_lockctl" ]] || { echo "not registered: ${_comps[lockctl]}"; exit 8; }
_describe() { local c w; for c in "${completions[@]}"; do w=${c//\\:/$'\0'}; w=${w%%:*}; print -r -- "${w//$'\0'/:}"; done; (( ${#completions} )) }
_arguments() { : }
words=(${=LINE})
[[ "$LINE" == *" " ]] && words+=("")
CURRENT=${#words}
_lockctl
true`

// fishProg loads `lockctl completion fish` and asks fish to complete $LINE.
const fishProg = `lockctl completion fish | source; or exit 9
complete -C "$LINE" | string replace -r '\t.*' ''
true`

func shellLines(t *testing.T, shell, prog, line string, env ...string) []string {
	t.Helper()
	cmd := exec.Command(shell, "-c", prog)
	cmd.Env = completionEnv(append(env, "LINE="+line)...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s completing %q: %v\n%s", shell, line, err, out)
	}
	var got []string
	for _, l := range strings.Split(string(out), "\n") {
		if l = strings.TrimSpace(l); l != "" {
			got = append(got, l)
		}
	}
	slices.Sort(got)
	return got
}

var completionShells = []struct{ shell, prog string }{
	{"bash", bashProg}, {"zsh", zshProg}, {"fish", fishProg},
}

func TestShellCompletion(t *testing.T) {
	t.Parallel()
	for _, sh := range completionShells {
		t.Run(sh.shell, func(t *testing.T) {
			t.Parallel()
			requireShell(t, sh.shell)
			for _, c := range completionCases {
				if got := shellLines(t, sh.shell, sh.prog, c.line); !slices.Equal(got, c.want) {
					t.Errorf("%s completes %q to %q; want %q", sh.shell, c.line, got, c.want)
				}
			}
		})
	}
	// After run's "--" the words are the command's: the shell's own (file)
	// completion, not lockctl's.
	requireShell(t, "bash")
	if got := shellLines(t, "bash", bashProg, "lockctl run k -- "); len(got) != 0 {
		t.Errorf("bash completes after -- to %q; want nothing from lockctl", got)
	}
}

// In every shell, KEY of a lease command completes to the keys held in the
// database the command line would use ($DATABASE_URL here), and --owner
// and --token to that key's lease; end-delay's KEY to the keys in their
// lock-delay.
func TestShellCompletionFromDatabase(t *testing.T) {
	t.Parallel()
	d := newDB(t)
	live, _ := openSessions(t, d)
	// Leases outlast the test: the shells take their time on a loaded machine.
	lease := d.json(0, "acquire", "deploy", "--owner", "alice", "--ttl", "1h")
	d.expect(0, "acquire", "reports", "--owner", "bob", "--ttl", "1h")
	d.expect(0, "acquire", "stale", "--owner", "carol")
	d.expireLease("stale")
	cases := []completionCase{
		{"lockctl release ", []string{"deploy", "reports"}},
		{"lockctl expire re", []string{"reports"}},
		{"lockctl renew deploy --owner ", []string{"alice"}},
		{"lockctl force-release deploy --token ", []string{tokenArg(lease.Token)}},
		{"lockctl end-session ", []string{live}},
	}
	for _, sh := range completionShells {
		t.Run(sh.shell, func(t *testing.T) {
			t.Parallel()
			requireShell(t, sh.shell)
			// A lock-delay lasts a minute at most, and on a loaded machine
			// a shell may start its cases later than that: each makes its
			// own delayed key and completes it first.
			ds, resting := db{t: t, dsn: d.dsn}, "resting-"+sh.shell
			ds.expect(0, "acquire", resting, "--owner", "dave", "--lock-delay", "1m")
			ds.expireLease(resting)
			delayed := completionCase{"lockctl end-delay " + resting, []string{resting}}
			for _, c := range append([]completionCase{delayed}, cases...) {
				got := shellLines(t, sh.shell, sh.prog, c.line, "DATABASE_URL="+d.dsn, slowMachine)
				// Another shell's resting key is held for a moment while it
				// is made; this shell's own must never show as held.
				got = slices.DeleteFunc(got, func(k string) bool { return strings.HasPrefix(k, "resting-") && k != resting })
				if !slices.Equal(got, c.want) {
					t.Errorf("%s completes %q to %q; want %q", sh.shell, c.line, got, c.want)
				}
			}
		})
	}
}

// completionCase is a line being typed and the words completion offers.
type completionCase struct {
	line string
	want []string
}

// slowMachine gives completion's database reads time on a loaded test
// machine: the default bound (1s) is for a person's shell.
const slowMachine = "LOCKCTL_COMPLETION_TIMEOUT=30s"

// completions runs `lockctl __complete ARGS`, what every shell's script
// runs, and returns the words offered (the last line is the directive).
func completions(t *testing.T, env []string, args ...string) []string {
	t.Helper()
	r := runEnv(t, env, append([]string{"__complete"}, args...)...)
	lines := strings.Split(strings.TrimRight(r.stdout, "\n"), "\n")
	if r.code != 0 || len(lines) == 0 || !strings.HasPrefix(lines[len(lines)-1], ":") {
		t.Fatalf("lockctl __complete %q: %s\nwant exit 0 and a directive line", args, r)
	}
	var words []string
	for _, l := range lines[:len(lines)-1] {
		word, _, _ := strings.Cut(l, "\t")
		words = append(words, word)
	}
	return words
}

func TestCompleteHeldKeys(t *testing.T) {
	t.Parallel()
	d := newDB(t)
	lease := d.json(0, "acquire", "job:b", "--owner", "w1", "--ttl", "1h")
	d.expect(0, "acquire", "job:a", "--owner", "w2", "--ttl", "1h")
	d.expect(0, "acquire", "other", "--owner", "w3", "--ttl", "1h")
	freed := d.json(0, "acquire", "job:freed", "--owner", "w4")
	d.expect(0, "release", "job:freed", "--owner", "w4", "--token", tokenArg(freed.Token))
	d.expect(0, "acquire", "job:stale", "--owner", "w5")
	d.expireLease("job:stale")

	for _, cmd := range []string{"release", "renew", "expire", "force-release"} {
		if got, want := completions(t, cleanEnv(slowMachine), cmd, "--dsn", d.dsn, ""), []string{"job:a", "job:b", "other"}; !slices.Equal(got, want) {
			t.Errorf("__complete %s \"\" = %q; want the held keys %q", cmd, got, want)
		}
	}
	env := cleanEnv("DATABASE_URL="+d.dsn, slowMachine)
	if got, want := completions(t, env, "release", "job:"), []string{"job:a", "job:b"}; !slices.Equal(got, want) {
		t.Errorf("__complete release job: = %q; want %q", got, want)
	}
	if got, want := completions(t, env, "release", "job:b", "--owner", ""), []string{"w1"}; !slices.Equal(got, want) {
		t.Errorf("__complete release job:b --owner = %q; want %q", got, want)
	}
	if got, want := completions(t, env, "renew", "job:b", "--owner", "w1", "--token", ""), []string{tokenArg(lease.Token)}; !slices.Equal(got, want) {
		t.Errorf("__complete renew job:b --token = %q; want %q", got, want)
	}
	if got := completions(t, env, "release", "job:freed", "--token", ""); len(got) != 0 {
		t.Errorf("__complete release job:freed --token = %q; want nothing: the key is free", got)
	}
	if got := completions(t, env, "release", "job:a", "extra"); len(got) != 0 {
		t.Errorf("__complete after KEY = %q; want nothing", got)
	}
}

// openSessions opens a live session and one that has lapsed, and returns
// their ids.
func openSessions(t *testing.T, d db) (live, lapsed string) {
	t.Helper()
	ctx := context.Background()
	pool := testdb.Pool(t, d.dsn)
	var opened []store.SessionRow
	for _, ttl := range []time.Duration{time.Hour, time.Millisecond} {
		s, err := store.OpenSession(ctx, pool, store.SessionParams{Owner: "svc", TTL: ttl})
		if err != nil {
			t.Fatal(err)
		}
		opened = append(opened, s)
	}
	testdb.WaitUntilPast(t, pool, opened[1].ExpiresAt)
	return strconv.FormatInt(opened[0].ID, 10), strconv.FormatInt(opened[1].ID, 10)
}

// end-session's ID completes to the live sessions, not a lapsed one
// (listed by sessions until pruned, but nothing to end).
func TestCompleteLiveSessions(t *testing.T) {
	t.Parallel()
	d := newDB(t)
	live, lapsed := openSessions(t, d)
	env := cleanEnv("DATABASE_URL="+d.dsn, slowMachine)
	if got := completions(t, env, "end-session", ""); !slices.Equal(got, []string{live}) {
		t.Errorf("__complete end-session \"\" = %q; want the live session %s", got, live)
	}
	if got := completions(t, env, "end-session", live, ""); len(got) != 0 {
		t.Errorf("__complete after ID = %q; want nothing", got)
	}
	rows := sessionsJSON(t, d)
	if len(rows) != 2 || strconv.FormatInt(rows[1].ID, 10) != lapsed || rows[1].State != "lapsed" || rows[1].RemainingMs != 0 {
		t.Fatalf("sessions --json = %+v; want the lapsed session %s listed as such", rows, lapsed)
	}
	out := d.expect(0, "sessions").stdout
	if !strings.Contains(out, "lapsed") || !strings.Contains(out, "live") {
		t.Errorf("sessions printed:\n%s\nwant a live and a lapsed session", out)
	}
}

// With the database unreachable, completion offers nothing and says
// nothing: an error printed into the line being typed would be worse.
func TestCompleteUnreachableDatabaseIsSilent(t *testing.T) {
	t.Parallel()
	dsn, _ := closedPortDSN(t, "pw")
	r := runEnv(t, cleanEnv("DATABASE_URL="+dsn), "__complete", "release", "")
	if r.code != 0 || strings.TrimSpace(r.stdout) != ":4" || strings.Contains(r.stderr, "connect") {
		t.Fatalf("%s\nwant exit 0, no completions (directive :4 only) and no error", r)
	}
}

func TestCompletionUsage(t *testing.T) {
	t.Parallel()
	r := run(t, "completion", "tcsh")
	if r.code != 2 || !strings.Contains(r.stderr, `unknown shell "tcsh": want one of bash, zsh, fish, powershell`) {
		t.Fatalf("%s\nwant exit 2 naming the shells", r)
	}
	for _, shell := range []string{"bash", "zsh", "fish", "powershell"} {
		if r := run(t, "completion", shell); r.code != 0 || !strings.Contains(r.stdout, "__complete") {
			t.Errorf("completion %s: %s\nwant a script that asks lockctl __complete", shell, r)
		}
	}
}
