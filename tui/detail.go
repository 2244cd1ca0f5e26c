package tui

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/lockctl/lockctl/store"
)

// detailContent is the detail pane: every column of the selected lock,
// its metadata, its waiters in queue order and its recent history.
func (m Model) detailContent() string {
	s := m.styles
	d := m.detail
	if d == nil {
		return ""
	}
	title := s.App.Render("Lock ") + s.Value.Render(safe(d.key))
	lines := []string{title}
	field := func(name, value string) {
		lines = append(lines, "  "+s.Label.Render(fmt.Sprintf("%-13s", name))+value)
	}
	if d.lock == nil {
		lines = append(lines, "", "  "+s.Muted.Render("this key has no lock row (pruned, or never acquired)"))
		return strings.Join(lines, "\n")
	}
	r := live(*d.lock, m.advance())
	st := s.stateStyle(r.state).Render(stateLabel(r.state, true))
	switch {
	case m.snap.page.Seed && r.state == store.StateHeld: // no TTL recorded
		st += s.Muted.Render(fmt.Sprintf("  %s left", shortDur(r.Remaining)))
	case r.state == store.StateHeld, r.state == store.StateExpiring:
		st += s.Muted.Render(fmt.Sprintf("  %s left of %s", shortDur(r.Remaining), shortDur(r.TTL)))
	case r.state == store.StateExpired:
		st += s.Muted.Render(fmt.Sprintf("  expired %s ago; the next acquirer steals it", shortDur(-r.Remaining)))
	}
	field("state", st)
	owner := safe(r.Owner)
	if r.state == store.StateFree {
		owner += s.Muted.Render("  (last holder)")
	}
	field("owner", owner)
	grant := r.GrantKind
	if r.PreviousOwner != nil {
		grant += fmt.Sprintf(" from %s", safe(*r.PreviousOwner))
		if r.PreviousToken != nil {
			grant += fmt.Sprintf(" (token %d)", *r.PreviousToken)
		}
	}
	field("token", fmt.Sprintf("%d", r.Token)+s.Muted.Render("  "+grant))
	field("expires at", utcFull(r.ExpiresAt)+s.Muted.Render("  database clock"))
	if m.snap.page.Seed {
		lines = append(lines, "", "  "+s.Muted.Render("The reference service's table records only these; "+
			"lockctl migrate adopts it with every lease intact."))
		return strings.Join(lines, "\n")
	}
	field("TTL", shortDur(r.TTL))
	field("acquired at", utcFull(r.AcquiredAt)+s.Muted.Render("  held for "+shortDur(r.HeldFor)))
	if r.RenewedAt != nil {
		field("renewed at", utcFull(*r.RenewedAt)+s.Muted.Render(fmt.Sprintf("  %s", plural(int64(r.RenewCount), "renewal", "renewals"))))
	} else {
		field("renewed at", s.Muted.Render("never"))
	}
	if r.ReleasedAt != nil {
		field("released at", utcFull(*r.ReleasedAt))
	} else {
		field("released at", s.Muted.Render("—"))
	}
	field("metadata", metadataText(r.Metadata))

	lines = append(lines, "", s.App.Render(fmt.Sprintf("Waiters (%d, in queue order: 1 is served next)", len(d.waiters))))
	if len(d.waiters) == 0 {
		lines = append(lines, "  "+s.Muted.Render("nobody is waiting"))
	}
	for i, w := range d.waiters {
		lines = append(lines, fmt.Sprintf("  %2d. %s  %s", i+1, safe(w.Owner),
			s.Muted.Render("waiting "+wholeDur(w.Waited+m.advance()))))
	}
	lines = append(lines, "", s.App.Render("Recent events (newest first)"))
	if len(d.events) == 0 {
		lines = append(lines, "  "+s.Muted.Render("none recorded"))
	}
	for _, e := range d.events {
		lines = append(lines, clip("  "+m.eventLine(e, false), m.width))
	}
	return strings.Join(lines, "\n")
}

// metadataText is a lock's metadata as sorted key=value pairs, escaped.
func metadataText(md map[string]any) string {
	if len(md) == 0 {
		return "{}"
	}
	keys := make([]string, 0, len(md))
	for k := range md {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		v, err := json.Marshal(md[k])
		if err != nil {
			v = []byte(fmt.Sprint(md[k]))
		}
		parts[i] = safe(k) + "=" + safe(string(v))
	}
	return strings.Join(parts, "  ")
}
