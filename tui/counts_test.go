package tui

import (
	"strings"
	"testing"
	"time"
)

// Counts kept from an earlier poll (a large table is counted only every so
// often) say how old they are; counts as fresh as the rows say nothing.
func TestTotalsSayHowOldTheirCountsAre(t *testing.T) {
	for _, width := range []int{120, 80} {
		fresh := fixtureSnapshot()
		fresh.Page.Counts.TakenAt = t0.Add(time.Millisecond)
		if s := screen(withSnapshot(t, testModel(t, Options{}, width, 35), fresh)); strings.Contains(s, "counted") {
			t.Errorf("width %d: counts taken by the poll itself are given an age:\n%s", width, s)
		}
		kept := fixtureSnapshot()
		kept.Page.Counts.TakenAt = t0.Add(-7 * time.Second)
		m := withSnapshot(t, testModel(t, Options{}, width, 35), kept)
		if s := screen(m); !strings.Contains(s, "counted 8s ago") { // 7s before the poll, read 1.5s ago
			t.Errorf("width %d: kept counts without their age:\n%s", width, s)
		}
	}
}
