package tui

import (
	"slices"
	"strings"

	"charm.land/lipgloss/v2"

	"github.com/lockctl/lockctl/internal/lockdb"
	"github.com/lockctl/lockctl/internal/lockview"
)

// span is a run of a line in one style.
type span struct {
	style lipgloss.Style
	text  string
}

// treeLine is one line of a chain, kept as spans until it is drawn so the
// selected one can take the cursor's background under every colour (as
// the locks table's selected row does). wait is the wait the line names,
// nil for a line the cursor skips (a holder's line, a deadlock's ring).
type treeLine struct {
	spans []span
	wait  *lockview.Wait
}

// draw renders a line behind the cursor's column: "▶ " when selected.
func (l treeLine) draw(s Styles, selected bool) string {
	var b strings.Builder
	if selected {
		b.WriteString(s.Selected.Render("▶ "))
	} else {
		b.WriteString("  ")
	}
	for _, sp := range l.spans {
		st := sp.style
		if selected {
			st = st.Inherit(s.Selected)
		}
		b.WriteString(st.Render(sp.text))
	}
	return b.String()
}

// treeLines draws the chains, each after a blank line.
func (p *blockingPage) treeLines(trees []lockview.BlockTree) []treeLine {
	var lines []treeLine
	for _, t := range trees {
		lines = append(lines, treeLine{})
		lines = append(lines, p.tree(t)...)
	}
	return lines
}

// tree draws one chain: its top line, then the waits under it.
func (p *blockingPage) tree(t lockview.BlockTree) []treeLine {
	s := p.c.styles
	top := t.Top
	var lines []treeLine
	switch t.Kind {
	case lockview.TreeRoot:
		lines = append(lines, treeLine{spans: []span{
			{s.Value, safe(top.Owner)}, {s.Muted, "  root blocker · holds " + heldKeys(top)}}})
	case lockview.TreeDeadlock:
		ring := make([]string, 0, len(t.Deadlock)+1)
		for _, o := range append(slices.Clone(t.Deadlock), t.Deadlock[0]) {
			ring = append(ring, safe(o))
		}
		lines = append(lines,
			treeLine{spans: []span{{s.Error, "✗ deadlock: " + strings.Join(ring, " → ")},
				{s.Muted, "  (each waits for a key the next holds)"}}},
			treeLine{spans: []span{{s.Error, safe(top.Owner)}, {s.Muted, "  holds " + heldKeys(top)}}})
	case lockview.TreeUnheld:
		spans := append([]span{{s.Value, safe(top.Owner)}, {lipgloss.NewStyle(), "  "}}, p.waitSpans(*top.Wait)...)
		spans = append(spans, span{s.Muted, " — nobody holds it (" + unheldWhy(top.Wait.KeyState) + "): next in line takes it"})
		lines = append(lines, treeLine{spans: spans, wait: top.Wait})
	}
	return p.branches(lines, top.Blocked, "")
}

// branches adds nodes under a line, indented by prefix.
func (p *blockingPage) branches(lines []treeLine, nodes []lockview.BlockNode, prefix string) []treeLine {
	s := p.c.styles
	for i, n := range nodes {
		elbow, next := "├─ ", "│  "
		if i == len(nodes)-1 {
			elbow, next = "└─ ", "   "
		}
		owner := s.Value
		if n.Cycle {
			owner = s.Error
		}
		spans := append([]span{{s.Muted, prefix + elbow}, {owner, safe(n.Owner)}, {lipgloss.NewStyle(), "  "}},
			p.waitSpans(*n.Wait)...)
		switch {
		case n.Cycle:
			spans = append(spans, span{s.Error, "  ↑ back to " + safe(n.Owner) + ": deadlock"})
		case n.Repeat:
			spans = append(spans, span{s.Muted, "  (its waiters are shown above)"})
		}
		lines = p.branches(append(lines, treeLine{spans: spans, wait: n.Wait}), n.Blocked, prefix+next)
	}
	return lines
}

// waitSpans are "waits 12s for KEY", the time counting on from the poll.
func (p *blockingPage) waitSpans(w lockview.Wait) []span {
	s := p.c.styles
	return []span{{s.Warning, "waits " + wholeDur(w.Waited+p.c.advance)}, {s.Muted, " for "}, {lipgloss.NewStyle(), safe(w.Key)}}
}

// heldKeys are the keys a node's waiters wait for (those it holds), escaped.
func heldKeys(n lockview.BlockNode) string {
	var keys []string
	for _, b := range n.Blocked {
		if k := safe(b.Wait.Key); !slices.Contains(keys, k) {
			keys = append(keys, k)
		}
	}
	return strings.Join(keys, ", ")
}

// unheldWhy says why nobody holds a waited key.
func unheldWhy(st lockdb.State) string {
	switch st {
	case lockdb.StateExpired:
		return "its lease expired"
	case lockdb.StateFree:
		return "released"
	case lockdb.StateDelayed:
		return "in its lock-delay"
	case lockdb.StateKept:
		return "kept until its at-least point"
	default:
		return "no lock row"
	}
}
