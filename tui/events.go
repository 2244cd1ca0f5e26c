package tui

import (
	"fmt"
	"strings"

	"github.com/lockctl/lockctl/internal/lockview"
)

// eventsContent is the events pane: the event log of all locks, newest
// first, as it grows.
func (m Model) eventsContent() string {
	s := m.styles
	lines := []string{s.App.Render("Event log") + s.Muted.Render(" — all locks, newest first, times in UTC (database clock) · esc back")}
	if len(m.events) == 0 {
		lines = append(lines, "", "  "+s.Muted.Render("no events yet"))
	}
	for _, e := range m.events {
		lines = append(lines, clip(m.eventLine(e, true), m.width))
	}
	return strings.Join(lines, "\n")
}

// eventLine is one event: time, kind, key (when withKey), owner, token,
// actor and what the detail adds.
func (m Model) eventLine(e lockview.Event, withKey bool) string {
	s := m.styles
	kind := fmt.Sprintf("%-20s", e.Kind)
	switch e.Kind {
	case lockview.EventStolen, lockview.EventForceExpired, lockview.EventForceReleased:
		kind = s.Expired.Render(kind)
	case lockview.EventStaleWriteRejected:
		kind = s.Warning.Render(kind)
	case lockview.EventReleased:
		kind = s.Free.Render(kind)
	default:
		kind = s.Held.Render(kind)
	}
	parts := []string{s.Muted.Render(utcClock(e.OccurredAt)), kind}
	if withKey {
		parts = append(parts, s.Value.Render(safe(e.Key)))
	}
	if e.Owner != nil {
		parts = append(parts, "owner "+safe(*e.Owner))
	}
	if e.Token != nil {
		parts = append(parts, fmt.Sprintf("token %d", *e.Token))
	}
	if e.PreviousOwner != nil {
		prev := "from " + safe(*e.PreviousOwner)
		if e.PreviousToken != nil {
			prev += fmt.Sprintf(" (token %d)", *e.PreviousToken)
		}
		parts = append(parts, prev)
	}
	if w, ok := e.Detail["waited_ms"]; ok {
		parts = append(parts, s.Muted.Render(fmt.Sprintf("after waiting %vms", w)))
	}
	if r, ok := e.Detail["reason"]; ok {
		parts = append(parts, s.Muted.Render("reason "+safe(fmt.Sprint(r))))
	}
	if res, ok := e.Detail["resource"]; ok {
		parts = append(parts, s.Muted.Render("resource "+safe(fmt.Sprint(res))))
	}
	parts = append(parts, s.Muted.Render("by "+safe(e.Actor)))
	return strings.Join(parts, "  ")
}
