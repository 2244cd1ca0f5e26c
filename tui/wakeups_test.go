package tui

import (
	"strings"
	"testing"

	"github.com/charmbracelet/x/ansi"
)

// The header says whether release notifications are heard, when the
// console runs a Notifier, and points at the flag that fixes it; narrow,
// it shows only the problem.
func TestHeaderShowsWakeUps(t *testing.T) {
	for _, tc := range []struct {
		live, known bool
		width       int
		want        string
	}{
		{false, false, 160, "wake-ups: checking…"},
		{true, true, 160, "wake-ups live"},
		{false, true, 160, "wake-ups not live (see --notify-dsn)"},
		{false, true, 60, "no wake-ups"},
		{true, true, 60, ""},
	} {
		m := withSnapshot(t, testModel(t, Options{WakeUps: func() (bool, bool) { return tc.live, tc.known }}, tc.width, 30), fixtureSnapshot())
		head := ansi.Strip(m.connLine())
		if tc.want == "" && strings.Contains(head, "wake-ups") || !strings.Contains(head, tc.want) {
			t.Errorf("live %v, known %v at %d columns: header %q, want %q", tc.live, tc.known, tc.width, head, tc.want)
		}
	}
	m := withSnapshot(t, testModel(t, Options{}, 160, 30), fixtureSnapshot())
	if head := ansi.Strip(m.connLine()); strings.Contains(head, "wake-ups") {
		t.Errorf("without a Notifier the header mentions wake-ups: %q", head)
	}
}
