package tui

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/lockctl/lockctl/internal/testdb"
)

// TestTinyTerminalsInTmux: the real binary started read-only in a 60x4
// pane (a split screen's strip) says the terminal is too small instead of
// panicking, lives through resizes down to one cell and up to very wide
// and short on every page, and shows its table again at 80x24; q still
// quits it, exit status 0.
func TestTinyTerminalsInTmux(t *testing.T) {
	dsn := testdb.DSN(t)
	pool := testdb.Pool(t, dsn)
	acquire(t, pool, "tiny:lock", "worker-1", 5*time.Minute)
	const app = "tiny-console"
	p := startPane(t, 60, 4, "--dsn", testdb.WithParam(dsn, "application_name", app), "--read-only", "--refresh", "300ms")
	p.waitFor("terminal too small", 10*time.Second)
	alive := func(what string) {
		t.Helper()
		if s := p.screen(); strings.Contains(s, "panic") || strings.Contains(s, "exit status") {
			t.Fatalf("%s: the console ended:\n%s", what, s)
		}
	}
	resize := func(w, h int) {
		t.Helper()
		p.tmux("resize-window", "-t", p.session, "-x", fmt.Sprint(w), "-y", fmt.Sprint(h))
	}
	sizes := [][2]int{{1, 1}, {1, 40}, {2, 2}, {300, 1}, {300, 3}, {20, 5}, {60, 4}, {59, 14}}
	// Each page in turn, resized through every size.
	for _, page := range []string{"", "Enter", "e", "b", "S", "?"} {
		resize(80, 24)
		p.waitFor("tiny:lock", 5*time.Second)
		if page != "" {
			p.keys(page)
		}
		for _, size := range sizes {
			// A frame drawn at this size from a fresh read.
			testdb.ReadAfter(t, pool, app, func() { resize(size[0], size[1]) })
			alive(fmt.Sprintf("page %q at %dx%d", page, size[0], size[1]))
		}
		resize(80, 24)
		p.waitUntil("the console at 80x24", 5*time.Second, func(s string) bool { return strings.Contains(s, "lockctl ·") })
		if page != "" {
			// Esc alone: one followed at once by another key reads as alt+key.
			p.keys("Escape")
			p.waitUntil("the table's footer", 5*time.Second, func(s string) bool {
				lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
				return strings.HasPrefix(lines[len(lines)-1], "? help")
			})
		}
	}
	p.keys("q")
	p.waitFor("exit status 0", 5*time.Second)
}
