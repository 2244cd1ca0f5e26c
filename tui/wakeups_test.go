package tui

import (
	"strings"
	"testing"

	"github.com/charmbracelet/x/ansi"

	"github.com/lockctl/lockctl/locker"
)

// The header says whether release notifications are heard, when the
// console runs a Notifier, and points at the flag that fixes it; narrow,
// it shows only the problem.
func TestHeaderShowsWakeUps(t *testing.T) {
	for _, tc := range []struct {
		state locker.WakeState
		width int
		want  string
	}{
		{locker.WakeChecking, 160, "wake-ups: checking…"},
		{locker.WakeLive, 160, "wake-ups live"},
		{locker.WakeNotLive, 160, "wake-ups not live (see --notify-dsn)"},
		{locker.WakeNotLive, 60, "no wake-ups"},
		{locker.WakeLive, 60, ""},
	} {
		m := withSnapshot(t, testModel(t, Options{WakeUps: func() locker.WakeState { return tc.state }}, tc.width, 30), fixtureSnapshot())
		head := ansi.Strip(m.connLine())
		if tc.want == "" && strings.Contains(head, "wake-ups") || !strings.Contains(head, tc.want) {
			t.Errorf("state %d at %d columns: header %q, want %q", tc.state, tc.width, head, tc.want)
		}
	}
	m := withSnapshot(t, testModel(t, Options{}, 160, 30), fixtureSnapshot())
	if head := ansi.Strip(m.connLine()); strings.Contains(head, "wake-ups") {
		t.Errorf("without a Notifier the header mentions wake-ups: %q", head)
	}
}
