package tui

import (
	"strings"
	"testing"

	"github.com/charmbracelet/x/ansi"
)

// The header says whether release notifications are heard, when the
// console runs a Notifier, and points at the flag that fixes it.
func TestHeaderShowsWakeUps(t *testing.T) {
	for _, tc := range []struct {
		live bool
		want string
	}{{true, "wake-ups live"}, {false, "wake-ups not live (see --notify-dsn)"}} {
		m := withSnapshot(t, testModel(t, Options{WakeUps: func() bool { return tc.live }}, 160, 30), fixtureSnapshot())
		if head := ansi.Strip(m.connLine()); !strings.Contains(head, tc.want) {
			t.Errorf("live=%v: header %q does not say %q", tc.live, head, tc.want)
		}
	}
	narrow := withSnapshot(t, testModel(t, Options{WakeUps: func() bool { return false }}, 60, 20), fixtureSnapshot())
	if head := ansi.Strip(narrow.connLine()); !strings.Contains(head, "no wake-ups") {
		t.Errorf("at 60 columns the header %q does not say wake-ups are not live", head)
	}
	m := withSnapshot(t, testModel(t, Options{}, 160, 30), fixtureSnapshot())
	if head := ansi.Strip(m.connLine()); strings.Contains(head, "wake-ups") {
		t.Errorf("without a Notifier the header mentions wake-ups: %q", head)
	}
}
