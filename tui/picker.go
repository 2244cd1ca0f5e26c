package tui

import (
	"fmt"
	"strings"
)

// pickerView is the context picker: each context's name in its colour,
// its database (password masked), whether it is read-only and which one
// is in use; the cursor on the one enter switches to.
func (m Model) pickerView() string {
	s := m.styles
	nameW := 0
	for _, c := range m.opts.Contexts {
		nameW = max(nameW, width(safe(c.Name)))
	}
	inner := max(10, min(m.width-6, 96)) // the dialog's border and padding take 4 cells
	lines := []string{s.App.Render("Switch context") + s.Muted.Render(" — the polls, the actions and every page move to it"), ""}
	// As many contexts as the body holds beside the dialog's other lines,
	// the cursor's among them.
	contexts := m.opts.Contexts
	rows := max(1, m.height-len(m.headerLines())-2-7)
	first := min(max(0, m.picker.cursor-rows/2), max(0, len(contexts)-rows))
	for i := first; i < min(len(contexts), first+rows); i++ {
		c := contexts[i]
		marker := "  "
		if i == m.picker.cursor {
			marker = s.Key.Render("▶ ")
		}
		name := safe(c.Name)
		// The notes before the database, whose DSN may be long: a
		// narrow dialog cuts that, not them.
		parts := []string{marker + s.contextBadge(c.Color).Render(name+strings.Repeat(" ", nameW-width(name)))}
		if c.Name == m.opts.Context.Name {
			parts = append(parts, s.Label.Render("in use"))
		}
		if c.ReadOnly {
			parts = append(parts, s.Warning.Render("read-only"))
		}
		parts = append(parts, s.Value.Render(safe(c.Database)))
		lines = append(lines, clip(strings.Join(parts, "  "), inner))
	}
	lines = append(lines, "", s.Muted.Render(fmt.Sprintf("↑/↓ choose · enter switch · esc cancel (%d contexts)", len(m.opts.Contexts))))
	return s.Dialog.Render(strings.Join(lines, "\n"))
}
