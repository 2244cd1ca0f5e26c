package serve

import (
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/lockctl/lockctl/internal/testdb"
	"github.com/lockctl/lockctl/internal/tmuxtest"
	"github.com/lockctl/lockctl/locker"
)

// TestConsoleOverSSHInTinyTerminals: through the real server and the
// OpenSSH client, a session whose terminal has no rows at all opens and
// lives, as does one resized down to nothing and through short and narrow
// sizes on every page, the acquire form and a confirm dialog; grown back
// to 80x24 it shows its table, q quits it (exit status 0), and the server
// logged no panic.
func TestConsoleOverSSHInTinyTerminals(t *testing.T) {
	dsn := testdb.DSN(t)
	db := testdb.Pool(t, dsn)
	lk := testdb.Locker(t, locker.Config{TTL: time.Minute})
	testdb.MustAcquire(t, lk, db, "ssh:tiny", "worker-1")
	const app = "tiny-serve"
	s := startServe(t, withApp(dsn, app))

	// The client's terminal reports 0 rows when ssh asks for the PTY.
	cmd := "stty rows 0 cols 60 && exec " + strings.Join(quoteAll(s.args(s.operator)), " ")
	p := tmuxtest.Start(t, 80, 24, nil, "sh", "-c", cmd)
	testdb.Eventually(t, within, "the session to open", func() bool {
		return strings.Contains(s.log.String(), `msg="session opened" actor=alice`)
	})
	for range 2 { // polls at 0 rows, and frames drawn from them
		testdb.ReadAfter(t, db, app, func() {})
	}
	alive := func(what string) {
		t.Helper()
		if log := s.log.String(); strings.Contains(log, "panic") || strings.Contains(log, "session ended") {
			t.Fatalf("%s: the session ended or panicked:\n%s\n%s", what, log, p.Screen())
		}
		if screen := p.Screen(); strings.Contains(screen, "exit status") {
			t.Fatalf("%s: ssh exited:\n%s\n%s", what, screen, s.log)
		}
	}
	alive("at 60x0")
	tty := strings.TrimSpace(p.Tmux("display", "-p", "-t", "test", "#{pane_tty}"))
	resize := func(w, h int) {
		t.Helper()
		// stty on the pane's terminal: the kernel tells ssh (SIGWINCH),
		// which sends the window change, 0 rows and 0 columns included.
		if out, err := sttySize(tty, w, h); err != nil {
			t.Fatalf("stty %dx%d: %v\n%s", w, h, err, out)
		}
	}
	sizes := [][2]int{{0, 0}, {1, 1}, {1, 40}, {60, 4}, {300, 2}, {0, 5}, {20, 5}, {2, 2}}
	for _, page := range []string{"", "Enter", "e", "b", "S", "?", "a", "x"} {
		resize(80, 24)
		p.WaitFor("ssh:tiny", within)
		if page != "" {
			p.Keys(page)
		}
		for _, size := range sizes {
			// A frame drawn at this size from a fresh read.
			testdb.ReadAfter(t, db, app, func() { resize(size[0], size[1]) })
			alive(fmt.Sprintf("page %q at %dx%d", page, size[0], size[1]))
		}
		resize(80, 24)
		if page != "" {
			p.WaitUntil("the page at 80x24", within, func(screen string) bool { return strings.Contains(screen, "lockctl ·") })
			p.Keys("Escape")
			p.WaitUntil("the table's footer", within, func(screen string) bool {
				lines := strings.Split(strings.TrimRight(screen, "\n"), "\n")
				return strings.HasPrefix(lines[len(lines)-1], "? help")
			})
		}
	}
	p.WaitFor("over SSH as alice (operator)", within)
	p.Keys("q")
	p.WaitFor("exit status 0", within)
	if log := s.log.String(); strings.Contains(log, "panic") {
		t.Fatalf("the server logged a panic:\n%s", log)
	}
}

func quoteAll(argv []string) []string {
	out := make([]string, len(argv))
	for i, a := range argv {
		out[i] = tmuxtest.Quote(a)
	}
	return out
}

// sttySize sets the terminal tty's size as `stty rows H cols W` would.
func sttySize(tty string, w, h int) ([]byte, error) {
	return exec.Command("stty", "-F", tty, "rows", fmt.Sprint(h), "cols", fmt.Sprint(w)).CombinedOutput()
}
