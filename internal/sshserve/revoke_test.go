package sshserve

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/lockctl/lockctl/internal/testdb"
)

// contexts records the context each session's program was given, in
// the order the sessions started.
type contexts chan context.Context

func (c contexts) app(ctx context.Context, s Session) (tea.Model, error) {
	c <- ctx
	return helloApp(ctx, s)
}

func (c contexts) next(t *testing.T) context.Context {
	t.Helper()
	select {
	case ctx := <-c:
		return ctx
	case <-time.After(within):
		t.Fatal("no session started")
		return nil
	}
}

// An operator's key is removed while its session is open: at the next
// re-read (here, anyone's authentication attempt) the session ends, the
// client is told so and exits 1, and the context its program's queries
// run under is over, so a write started from it never reaches the
// database. The viewer's session, whose key stays, goes on.
func TestRemovedKeyEndsItsSessionAtTheNextReRead(t *testing.T) {
	db := testdb.New(t)
	ctx := context.Background()
	if _, err := db.Exec(ctx, "CREATE TABLE acted (actor text)"); err != nil {
		t.Fatal(err)
	}
	started := make(contexts, 2)
	// No timer: only authentication attempts re-read the file.
	f := startFixture(t, Config{App: started.app, KeysCheckInterval: time.Hour})
	op := f.pane(f.operator)
	op.WaitFor("hello alice", within)
	opCtx := started.next(t)
	view := f.pane(f.viewer)
	view.WaitFor("hello bob", within)
	started.next(t)

	writeFile(t, f.authorizedKeys, fmt.Sprintf("role=\"viewer\",actor=\"bob\" %s\n", f.viewer.Pub))
	if opCtx.Err() != nil {
		t.Fatal("the session ended before the file was re-read")
	}
	// The stranger's attempt re-reads the file; when it is refused, the
	// operator's session has been ended.
	if out, code := f.run(f.stranger, "-tt"); code != 255 {
		t.Fatalf("stranger: exit %d, %q; want 255", code, out)
	}
	if opCtx.Err() == nil {
		t.Fatal("the removed key's session goes on after the re-read")
	}
	if _, err := db.Exec(opCtx, "INSERT INTO acted VALUES ('alice')"); err == nil {
		t.Error("a write under the ended session's context succeeded")
	}
	var n int
	if err := db.QueryRow(ctx, "SELECT count(*) FROM acted").Scan(&n); err != nil || n != 0 {
		t.Fatalf("%d rows written by the ended session (%v); want none", n, err)
	}
	screen := op.WaitFor("exit status 1", within)
	if !strings.Contains(screen, "removed from the server's authorized keys") || strings.Contains(screen, "hello alice") {
		t.Errorf("the client is not told why, or the program's screen is left:\n%s", screen)
	}
	// The key is refused from now on; the viewer goes on.
	if out, code := f.run(f.operator, "-tt"); code != 255 {
		t.Errorf("removed key: exit %d, %q; want 255", code, out)
	}
	view.Keys("z")
	view.WaitFor("keys 1", within)
	if log := f.log.String(); !strings.Contains(log, `msg="session ended" actor=alice`) ||
		!strings.Contains(log, `reason="key no longer authorized"`) {
		t.Errorf("the log does not show alice's session ended for its key:\n%s", log)
	}
}

// Without anyone connecting, the periodic check re-reads the file: a
// removed viewer's session and an operator taken down to viewer both
// end; a key whose line did not change keeps its session until the file
// becomes unsafe.
func TestKeysCheckEndsSessionsWithoutAConnection(t *testing.T) {
	f := startFixture(t, Config{KeysCheckInterval: 100 * time.Millisecond})
	writeFile(t, f.authorizedKeys, fmt.Sprintf("role=\"operator\",actor=\"alice\" %s\nrole=\"viewer\",actor=\"bob\" %s\nrole=\"viewer\",actor=\"carol\" %s\n",
		f.operator.Pub, f.viewer.Pub, f.stranger.Pub))
	op, view, carol := f.pane(f.operator), f.pane(f.viewer), f.pane(f.stranger)
	op.WaitFor("hello alice", within)
	view.WaitFor("hello bob", within)
	carol.WaitFor("hello carol", within)
	writeFile(t, f.authorizedKeys, fmt.Sprintf("role=\"viewer\",actor=\"alice\" %s\nrole=\"viewer\",actor=\"carol\" %s\n",
		f.operator.Pub, f.stranger.Pub))
	for _, p := range []interface {
		WaitFor(string, time.Duration) string
	}{op, view} {
		if screen := p.WaitFor("exit status 1", within); !strings.Contains(screen, "the session is ended") {
			t.Errorf("no message before the session closed:\n%s", screen)
		}
	}
	carol.Keys("z")
	carol.WaitFor("keys 1", within)
	// A file that became group-writable authorizes no one: carol's
	// session ends too.
	if err := os.Chmod(f.authorizedKeys, 0o620); err != nil {
		t.Fatal(err)
	}
	carol.WaitFor("exit status 1", within)
}

// A session is ended at MaxSessionAge, however busy: the client is told
// why, its terminal is restored and ssh exits 0.
func TestSessionsEndAtTheirMaximumAge(t *testing.T) {
	f := startFixture(t, Config{MaxSessionAge: 2 * time.Second})
	p := f.pane(f.operator)
	p.WaitFor("hello alice", within)
	// Activity does not extend it: keys, each seen by the program, right
	// up to the end.
	var screen string
	for n := 1; !strings.Contains(screen, "exit status"); n++ {
		p.Keys("z")
		keys := fmt.Sprintf("keys %d", n)
		screen = p.WaitUntil(strconv.Quote(keys)+" or the end", within, func(s string) bool {
			return strings.Contains(s, keys) || strings.Contains(s, "exit status")
		})
	}
	screen = p.WaitFor("exit status 0", within)
	if !strings.Contains(screen, "maximum session age (2s)") || strings.Contains(screen, "hello alice") {
		t.Errorf("the client is not told why, or the program's screen is left:\n%s", screen)
	}
	if !strings.Contains(f.log.String(), `reason="max session age"`) {
		t.Errorf("the log does not say the session reached its age:\n%s", f.log)
	}
}
