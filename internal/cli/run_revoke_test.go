package cli_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// An operator's revoke reaches the command as SIGTERM at lockctl's next
// heartbeat, with who and why on stderr; a command that then exits ends
// cleanly: its status, the lease released (the next owner acquires, no
// steal, no lock-delay).
func TestRunPassesARevokeToTheCommand(t *testing.T) {
	t.Parallel()
	d := newDB(t)
	dir := t.TempDir()
	p := d.start(append([]string{"run", "k", "--ttl", "3s", "--lock-delay", "30s", "--"},
		script(dir, `trap 'echo term > $DIR/term; exit 0' TERM; touch $DIR/started; while :; do sleep 0.1; done`)...)...)
	p.waitForFile(filepath.Join(dir, "started"))
	if got := d.run("revoke", "k", "--actor", "ops", "--reason", "drain the host"); got.code != 0 || !strings.HasPrefix(got.stdout, "revoked k token=") {
		t.Fatalf("revoke: %s\nwant revoked k", got)
	}
	r := p.wait()
	if r.code != 0 || !strings.Contains(r.stderr, "k (token") || !strings.Contains(r.stderr, "revoked by ops") ||
		!strings.Contains(r.stderr, "drain the host") || !strings.Contains(r.stderr, "sent SIGTERM") {
		t.Fatalf("%s\nwant exit 0, the revoke told (ops, the reason, SIGTERM)", r)
	}
	if got := readFile(t, filepath.Join(dir, "term")); got != "term\n" {
		t.Fatalf("the command's TERM trap wrote %q", got)
	}
	if got := d.json(0, "acquire", "k", "--owner", "next"); got.Outcome != "acquired" {
		t.Fatalf("acquire after the revoked run = %+v; want acquired (released cleanly)", got)
	}
}

// --revoke-signal none: the command is not told, only stderr is.
func TestRunRevokeSignalNone(t *testing.T) {
	t.Parallel()
	d := newDB(t)
	dir := t.TempDir()
	p := d.start(append([]string{"run", "k", "--ttl", "3s", "--revoke-signal", "none", "--"},
		script(dir, `trap 'echo term > $DIR/term; exit 0' TERM; touch $DIR/started; while [ ! -e $DIR/stop ]; do sleep 0.1; done`)...)...)
	p.waitForFile(filepath.Join(dir, "started"))
	if got := d.run("revoke", "k", "--actor", "ops"); got.code != 0 {
		t.Fatalf("revoke: %s", got)
	}
	p.waitForStderr("revoked by ops")
	if err := os.WriteFile(filepath.Join(dir, "stop"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	r := p.wait()
	if r.code != 0 || strings.Contains(r.stderr, "sent SIG") {
		t.Fatalf("%s\nwant exit 0, no signal sent", r)
	}
	if _, err := os.Stat(filepath.Join(dir, "term")); err == nil {
		t.Fatal("the command got SIGTERM")
	}
}

// revoke is fenced by token like expire (exit 4 for a token no longer
// current), and --force-after 0 ends the lease now: the next acquirer
// steals the key.
func TestRevokeIsFencedAndForcesAfterItsDeadline(t *testing.T) {
	t.Parallel()
	d := newDB(t)
	held := d.json(0, "acquire", "k", "--owner", "a", "--ttl", "1h")
	if got := d.run("revoke", "k", "--token", "7"); got.code != 4 {
		t.Fatalf("revoke of a token not current: %s\nwant exit 4", got)
	}
	if got := d.run("revoke", "k", "--force-after", "0s", "--reason", "now"); got.code != 0 || !strings.Contains(got.stdout, "at the latest") {
		t.Fatalf("revoke --force-after 0s: %s", got)
	}
	if got := d.json(0, "acquire", "k", "--owner", "b"); got.Outcome != "stolen" || got.Token <= held.Token {
		t.Fatalf("acquire past the deadline = %+v; want stolen with a larger token", got)
	}
}
