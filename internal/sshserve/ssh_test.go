package sshserve

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"
)

const within = 15 * time.Second

// An authorized key gets a session as its actor and role, in a terminal of
// the client's size; q quits the program and ssh exits 0.
func TestAuthorizedKeysGetTheirIdentity(t *testing.T) {
	f := startFixture(t, Config{})
	op := f.pane(f.operator)
	op.WaitFor("hello alice, role operator, 80x24", within)
	view := f.pane(f.viewer)
	view.WaitFor("hello bob, role viewer, 80x24", within)
	view.Keys("x", "y")
	view.WaitFor("keys 2", within)
	view.Keys("q")
	screen := view.WaitFor("exit status 0", within)
	if strings.Contains(screen, "hello bob") {
		t.Errorf("the program's screen is still there after it quit (alternate screen not left):\n%s", screen)
	}
	// The viewer's quit ended only its own session.
	op.Keys("z")
	op.WaitFor("keys 1", within)
	if !strings.Contains(f.log.String(), `msg="session ended" actor=bob`) || !strings.Contains(f.log.String(), "reason=quit") {
		t.Errorf("the log does not show bob's session ending by quit:\n%s", f.log)
	}
}

// A key not in authorized_keys is refused at authentication, and the server
// offers no method but publickey (no password, no keyboard-interactive).
func TestUnknownKeyAndPasswordsAreRefused(t *testing.T) {
	f := startFixture(t, Config{})
	out, code := f.run(f.stranger, "-tt")
	if code != 255 || !strings.Contains(out, "Permission denied (publickey)") {
		t.Errorf("stranger's key: exit %d, output %q; want 255 and Permission denied (publickey)", code, out)
	}
	out, code = f.run(f.operator, "-o", "PreferredAuthentications=password,keyboard-interactive")
	if code != 255 || !strings.Contains(out, "Permission denied (publickey)") {
		t.Errorf("password auth: exit %d, output %q; want 255 and only publickey offered", code, out)
	}
	if !strings.Contains(f.log.String(), "key refused") {
		t.Errorf("the refused key is not in the server's log:\n%s", f.log)
	}
}

// A session without a terminal, or with a command, is refused with a
// message and exit status 1.
func TestSessionsWithoutAPTYOrWithACommandAreRefused(t *testing.T) {
	f := startFixture(t, Config{})
	out, code := f.run(f.operator, "-T")
	if code != 1 || !strings.Contains(out, "Requires an active PTY") {
		t.Errorf("no PTY: exit %d, output %q; want 1 and a message", code, out)
	}
	argv := append(f.sshArgs(f.operator, "-tt"), "ls", "/")
	p := tmuxStartArgv(t, argv)
	p.WaitFor("runs only the console", within)
	p.WaitFor("exit status 1", within)
}

// The file is re-read when it changes: a removed key is refused from the
// next connection, an added one accepted, without a restart.
func TestAuthorizedKeysAreReReadWhenTheyChange(t *testing.T) {
	f := startFixture(t, Config{})
	f.pane(f.viewer).WaitFor("hello bob", within)
	writeFile(t, f.authorizedKeys, fmt.Sprintf("role=\"operator\",actor=\"alice\" %s\nrole=\"viewer\",actor=\"carol\" %s\n",
		f.operator.Pub, f.stranger.Pub))
	if out, code := f.run(f.viewer, "-tt"); code != 255 {
		t.Errorf("removed key: exit %d, output %q; want 255 (refused)", code, out)
	}
	f.pane(f.stranger).WaitFor("hello carol, role viewer", within)
	// A line that became bad is skipped and logged; the others still apply.
	writeFile(t, f.authorizedKeys, fmt.Sprintf("role=\"admin\",actor=\"alice\" %s\nrole=\"viewer\",actor=\"carol\" %s\n",
		f.operator.Pub, f.stranger.Pub))
	if out, code := f.run(f.operator, "-tt"); code != 255 {
		t.Errorf("key on a bad line: exit %d, output %q; want 255 (refused)", code, out)
	}
	f.pane(f.stranger).WaitFor("hello carol", within)
	if !strings.Contains(f.log.String(), `unknown role \"admin\"`) {
		t.Errorf("the skipped line is not in the log:\n%s", f.log)
	}
	// A file that became group-writable authorizes no one.
	if err := os.Chmod(f.authorizedKeys, 0o620); err != nil {
		t.Fatal(err)
	}
	if out, code := f.run(f.stranger, "-tt"); code != 255 {
		t.Errorf("group-writable file: exit %d, output %q; want 255 (refused)", code, out)
	}
}

// One session more than MaxSessions is refused with a message; the open
// one goes on.
func TestSessionLimit(t *testing.T) {
	f := startFixture(t, Config{MaxSessions: 1})
	first := f.pane(f.operator)
	first.WaitFor("hello alice", within)
	second := f.pane(f.viewer)
	second.WaitFor("1 sessions are open, the server's limit", within)
	second.WaitFor("exit status 1", within)
	first.Keys("z")
	first.WaitFor("keys 1", within)
}

// A session that sends nothing for IdleTimeout is ended; the terminal is
// given back (ssh exits, the program's screen is gone).
func TestIdleSessionsAreEnded(t *testing.T) {
	f := startFixture(t, Config{IdleTimeout: time.Second})
	p := f.pane(f.viewer)
	p.WaitFor("hello bob", within)
	screen := p.WaitFor("exit status 0", within)
	if strings.Contains(screen, "hello bob") {
		t.Errorf("program screen left behind:\n%s", screen)
	}
	if !strings.Contains(f.log.String(), "reason=\"idle timeout\"") {
		t.Errorf("the log does not say the session ended idle:\n%s", f.log)
	}
}

// Shutting down (what SIGTERM does) quits every session's program: the
// terminals are restored, the clients exit 0, Serve returns nil.
func TestShutdownEndsSessionsCleanly(t *testing.T) {
	f := startFixture(t, Config{})
	a, b := f.pane(f.operator), f.pane(f.viewer)
	a.WaitFor("hello alice", within)
	b.WaitFor("hello bob", within)
	if err := f.shutdown(); err != nil {
		t.Fatalf("Serve after shutdown: %v", err)
	}
	for _, p := range []interface {
		WaitFor(string, time.Duration) string
	}{a, b} {
		screen := p.WaitFor("exit status 0", within)
		if strings.Contains(screen, "hello") {
			t.Errorf("program screen left behind:\n%s", screen)
		}
	}
	if n := strings.Count(f.log.String(), `reason="server shutdown"`); n != 2 {
		t.Errorf("%d sessions logged as ended by the shutdown, want 2:\n%s", n, f.log)
	}
}
