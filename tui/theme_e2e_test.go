package tui

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/lockctl/lockctl/internal/testdb"
	"github.com/lockctl/lockctl/store"
)

// TestThemesInTmux runs the real binary with --theme dark and --theme
// light in a terminal of 256 colours (tmux's), opens every page, a
// confirmation and the acquire form, and checks each screen as the
// terminal drew it: every glyph of text reads on the theme's backgrounds.
// The two themes draw differently.
func TestThemesInTmux(t *testing.T) {
	dsn := testdb.DSN(t)
	pool := testdb.Pool(t, dsn)
	acquire(t, pool, "billing:nightly", "worker-3:8812:ab12cd34", 5*time.Minute)
	acquire(t, pool, "cache:warmup", "worker-1:77:0f0f0f0f", 5*time.Minute)
	if _, _, err := store.Enqueue(context.Background(), pool, store.QueueParams{
		GrantParams: store.GrantParams{Key: "billing:nightly", Owner: "worker-9:1:aaaa0001", TTL: time.Minute},
		ClaimWindow: time.Second, SeenFor: 5 * time.Minute,
	}); err != nil {
		t.Fatal(err)
	}
	title := map[Theme]string{}
	for _, theme := range []Theme{ThemeDark, ThemeLight} {
		p := startPane(t, 120, 35, "--dsn", dsn, "--theme", string(theme), "--refresh", "300ms")
		colourScreen := func() string { return p.tmux("capture-pane", "-e", "-p", "-t", p.session) }
		check := func(page string) {
			t.Helper()
			if low := lowContrast(colourScreen(), theme, largeContrast); len(low) > 0 {
				t.Errorf("%s theme, %s: %d glyphs read poorly, first %s\n%s", theme, page, len(low), low[0], p.screen())
			}
		}
		p.waitFor("billing:nightly", 10*time.Second)
		p.waitFor("1 · ", 5*time.Second) // the waiter
		title[theme], _, _ = strings.Cut(colourScreen(), "lockctl")
		check("the table")
		for _, page := range []struct{ keys, shows, name string }{
			{"Enter", "Lock billing:nightly", "the detail page"},
			{"e", "Event log", "the event log"},
			{"b", "Who waits for whom", "the blocking page"},
			{"S", "Sessions", "the sessions page"},
			{"h", "Hot keys", "the hot keys page"},
			{"?", "Keys", "help"},
		} {
			p.keys(page.keys)
			p.waitFor(page.shows, 5*time.Second)
			check(page.name)
			p.keys("Escape")
			p.waitUntil("the table", 5*time.Second, func(s string) bool { return !strings.Contains(s, page.shows) })
		}
		p.keys("x")
		p.waitFor("Force-expire this lock?", 5*time.Second)
		check("the force-expire dialog")
		p.keys("n")
		p.keys("a")
		p.waitFor("Acquire a lock", 5*time.Second)
		check("the acquire form")
		p.keys("Escape")
		// Esc at once followed by q would read as alt+q.
		p.waitUntil("the form closed", 5*time.Second, func(s string) bool { return !strings.Contains(s, "Acquire a lock") })
		p.keys("q")
		p.waitFor("exit status 0", 5*time.Second)
	}
	if title[ThemeDark] == title[ThemeLight] {
		t.Errorf("the title is drawn the same in both themes: %q", title[ThemeDark])
	}
}
