package tui

import (
	"slices"
	"strings"

	"charm.land/bubbles/v2/key"
	"charm.land/bubbles/v2/viewport"
	tea "charm.land/bubbletea/v2"
	"charm.land/lipgloss/v2"
)

// helpPage is the `?` screen: every key, what the states and colours
// mean, and how to free a stuck lock.
type helpPage struct {
	c     common
	width int
	view  viewport.Model
}

func newHelpPage() *helpPage { return &helpPage{view: viewport.New()} }

func (p *helpPage) Init() tea.Cmd { return nil }

func (p *helpPage) SetSize(width, height int) {
	p.width = width
	sizeViewport(&p.view, width, height)
	p.render()
}

func (p *helpPage) Update(msg tea.Msg) (Component, tea.Cmd) {
	q := *p
	switch msg := msg.(type) {
	case commonMsg:
		q.c = msg.common
		if msg.onScreen {
			q.render()
		}
	case pageOpenedMsg:
		q.render()
		q.view.GotoTop()
	case tea.KeyPressMsg:
		scroll(&q.view, q.c.keys, msg)
	}
	return &q, nil
}

func (p *helpPage) render() {
	if p.width > 0 {
		p.view.SetContent(p.content())
	}
}

func (p *helpPage) View() string { return p.view.View() }

func (p *helpPage) ShortHelp() []key.Binding {
	k := p.c.keys
	return []key.Binding{shortHelp(k.Close, "back"), k.Scroll, k.Help, k.Quit}
}

func (p *helpPage) FullHelp() [][]key.Binding { return p.c.keys.FullHelp() }

func (p *helpPage) content() string {
	s := p.c.styles
	st := func(style interface{ Render(...string) string }, name, meaning string) string {
		return "  " + style.Render(fitText(name, 20)) + meaning
	}
	lines := []string{
		s.App.Render("Keys") + s.Muted.Render("  (esc or ? closes this help; ↑/↓ scroll it)"),
		keysHelp(s, p.c.keys, p.width),
		"",
		s.App.Render("States"),
		st(s.Held, "held", "an owner holds the lease; the bar shows how much of its TTL is left"),
		st(s.Expiring, "expiring soon", "held, under a fifth of its TTL and under 10s left: the holder should renew now"),
		st(s.Expired, "expired, stealable", "the TTL ran out without a renewal or release; the next acquirer takes it"),
		st(s.Free, "free (released)", "released; OWNER shows the last holder"),
		st(s.Delayed, "delayed, no grants", "its lease ended without a release; nobody gets it until its lock-delay ends (u ends it)"),
		s.Muted.Render("  Remaining TTL comes from the database's clock and counts down between refreshes."),
		s.Muted.Render("  WAITERS: how many callers wait in Acquire for the key · how long the first has waited."),
		s.Muted.Render("  OWNER of a key held shared: its holders (shared · 3 holders); of a semaphore: permits in use (2/3 permits)."),
	}
	if p.c.keys.Expire.Enabled() {
		lines = append(lines, s.Muted.Render("  Its detail page (enter) lists each holder: ↑/↓ select one, and the actions act on that holder alone."))
	} else {
		lines = append(lines, s.Muted.Render("  Its detail page (enter) lists each holder, with its own owner, token and TTL."))
	}
	if p.c.keys.Expire.Enabled() {
		lines = append(lines, "",
			s.App.Render("Free a stuck lock"),
			"  1. "+s.Key.Render("/")+" type part of its key or owner, "+s.Key.Render("enter")+
				"  (or "+s.Key.Render("s")+" until sort is TTL: expired locks come first)",
			"  2. "+s.Key.Render("↑/↓")+" to select it, "+s.Key.Render("enter")+" to check its details, history and waiters",
			"  3. "+s.Key.Render("x")+" force-expire (the next acquirer takes it over) or "+
				s.Key.Render("d")+" force-release (free now), then "+s.Key.Render("y")+" to confirm",
			s.Muted.Render("     The action applies only if the lock still has the token you saw; otherwise you are told who holds it now."),
		)
	} else if p.c.reference && !p.c.readOnly {
		lines = append(lines, "", s.Muted.Render("Read-only: this is the reference service's table, not migrated. "+
			"lockctl migrate adopts it (every lease kept); then the actions are on."))
	} else if p.c.readOnly {
		lines = append(lines, "", s.Muted.Render("Read-only console (--read-only): acquire, renew, expire, release and ending a session are off."))
	} else {
		lines = append(lines, "", s.Muted.Render("Your database role may not force-expire or force-release locks: those keys are off."))
	}
	return strings.Join(lines, "\n")
}

// keysHelp lists every enabled key, one per line, in the KeyMap's groups:
// readable at any width (the help bubble's columns need a wide terminal).
func keysHelp(s Styles, keys KeyMap, width int) string {
	var cols [][]string
	for _, group := range keys.FullHelp() {
		var col []string
		for _, b := range group {
			if b.Enabled() {
				col = append(col, "  "+s.Key.Render(fitText(b.Help().Key, 7))+" "+fitText(b.Help().Desc, 36))
			}
		}
		switch {
		case len(col) == 0:
		case len(cols) == 2: // actions go under the pane keys: two columns fit 100 cells
			cols[1] = append(append(cols[1], ""), col...)
		default:
			cols = append(cols, col)
		}
	}
	if width >= 46*len(cols) { // side by side when they fit
		blocks := make([]string, len(cols))
		for i, c := range cols {
			blocks[i] = strings.Join(c, "\n")
		}
		return lipgloss.JoinHorizontal(lipgloss.Top, blocks...)
	}
	var lines []string
	for _, c := range cols {
		lines = append(lines, c...)
	}
	return strings.Join(lines, "\n")
}

// fitText pads or truncates plain text.
func fitText(s string, w int) string { return fit(s, w) }

// footer is the one-line help: the context's bindings that fit the width.
// The first (how to get help or back out) and the last (quit) always stay;
// the ones before the last go first, so nothing is cut mid-word.
func (m Model) footer() string {
	bindings := slices.DeleteFunc(m.contextHelp(), func(b key.Binding) bool { return !b.Enabled() })
	unbounded := m.help
	unbounded.SetWidth(0)
	for len(bindings) > 2 && width(unbounded.ShortHelpView(bindings)) > m.width {
		bindings = slices.Delete(bindings, len(bindings)-2, len(bindings)-1)
	}
	return unbounded.ShortHelpView(bindings)
}

// contextHelp is the short help for what has the keyboard now: a dialog
// of the root's, else the page on screen (disabled bindings are left out
// by footer).
func (m Model) contextHelp() []key.Binding {
	k := m.keys
	switch {
	case m.confirm != nil:
		focused := "No"
		if m.confirm.yesFocus {
			focused = "Yes"
		}
		return []key.Binding{shortHelp(k.No, "no"), shortHelp(k.Yes, "yes, do it"), shortHelp(k.Switch, "switch button"),
			shortHelp(k.Confirm, "choose focused ("+focused+")")}
	case m.form != nil:
		return []key.Binding{shortHelp(k.Close, "cancel"), shortHelp(k.Switch, "next field"), shortHelp(k.Confirm, "acquire")}
	case m.export != nil:
		return []key.Binding{shortHelp(k.Confirm, "write"), shortHelp(k.Close, "cancel")}
	case m.picker != nil:
		choose := key.NewBinding(key.WithKeys("up", "down"), key.WithHelp("↑/↓", "choose"))
		return []key.Binding{choose, shortHelp(k.Confirm, "switch"), shortHelp(k.Close, "cancel")}
	}
	return m.pages[m.active].ShortHelp()
}
