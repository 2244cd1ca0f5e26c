package tui

import (
	"fmt"
	"strings"

	"charm.land/bubbles/v2/key"
	"charm.land/bubbles/v2/viewport"
	tea "charm.land/bubbletea/v2"

	"github.com/lockctl/lockctl/internal/lockview"
)

// blockingPage is who waits for whom across keys: each chain of waits
// drawn as a tree down from its root blocker (an owner that holds what
// others wait for and waits for nothing), then the deadlocks, then waits
// for keys nobody holds. Each poll reads it while it is on screen.
//
// A cursor stands on the lines that name a wait; enter opens the detail
// page of the key it waits for, whose esc comes back here with the cursor
// where it was. The selection follows the wait (waiter and key) from poll
// to poll, or goes to the nearest wait line when that wait is over.
type blockingPage struct {
	c     common
	width int
	data  *lockview.Blocking // nil until the first poll since opening
	view  viewport.Model

	waits   []waitLine // the lines the cursor stands on, top to bottom
	cursor  int        // index in waits; -1: none
	sel     waitRef    // the selected wait
	selLine int        // its content line; -1: nothing selected yet

	out outbox
}

func newBlockingPage() *blockingPage {
	return &blockingPage{view: viewport.New(), cursor: -1, selLine: -1}
}

func (p *blockingPage) Init() tea.Cmd { return nil }

func (p *blockingPage) SetSize(width, height int) {
	p.width = width
	sizeViewport(&p.view, width, height)
	p.render()
}

func (p *blockingPage) takeAsks() (Component, outbox) {
	q := *p
	q.out = outbox{}
	return &q, p.out
}

func (p *blockingPage) askPoll(req *PollRequest, active bool) {
	if active {
		req.Blocking = true
	}
}

// selectedLock: the page selects waits, not locks; the actions stay off.
func (p *blockingPage) selectedLock() (lockview.ListedLock, bool) {
	return lockview.ListedLock{}, false
}

// selectedKey is the key the selected wait waits for: enter opens it.
func (p *blockingPage) selectedKey() (string, bool) {
	if p.cursor < 0 {
		return "", false
	}
	return p.sel.key, true
}

func (p *blockingPage) Update(msg tea.Msg) (Component, tea.Cmd) {
	q := *p
	switch msg := msg.(type) {
	case commonMsg:
		q.c = msg.common
		if msg.onScreen {
			q.render() // the waiting times
		}
	case pageOpenedMsg:
		if !msg.returned {
			q.selLine = -1
			q.view.GotoTop()
		}
		q.render()
		q.out.poll = true
	case snapshotMsg:
		if msg.snap.Blocking != nil {
			q.data = msg.snap.Blocking
			q.render()
		}
	case tea.KeyPressMsg:
		q.key(msg)
	}
	return &q, nil
}

// key moves the cursor, or scrolls while no line names a wait.
func (p *blockingPage) key(msg tea.KeyPressMsg) {
	if p.cursor < 0 {
		scroll(&p.view, p.c.keys, msg)
		return
	}
	k := p.c.keys
	switch {
	case key.Matches(msg, k.Up):
		p.move(-1)
	case key.Matches(msg, k.Down):
		p.move(1)
	case key.Matches(msg, k.PageUp):
		p.turnPage(-1)
	case key.Matches(msg, k.PageDown):
		p.turnPage(1)
	case key.Matches(msg, k.Home):
		p.selectWait(0)
	case key.Matches(msg, k.End):
		p.selectWait(len(p.waits) - 1)
	default:
		return
	}
	p.render()
}

// render draws the content anew, puts the cursor back on its wait and
// keeps it in view.
func (p *blockingPage) render() {
	if p.width <= 0 {
		return
	}
	head, tree := p.content()
	p.waits = waitLines(tree, len(head))
	p.follow()
	lines := head
	for i, l := range tree {
		lines = append(lines, l.draw(p.c.styles, p.cursor >= 0 && len(head)+i == p.selLine))
	}
	for i, l := range lines {
		lines[i] = clip(l, p.width)
	}
	p.view.SetContent(strings.Join(lines, "\n"))
	p.ensureVisible()
}

func (p *blockingPage) View() string { return p.view.View() }

func (p *blockingPage) ShortHelp() []key.Binding {
	k := p.c.keys
	if p.cursor < 0 {
		return []key.Binding{shortHelp(k.Close, "back"), k.Scroll, shortHelp(k.Events, "events"), shortHelp(k.Export, "export"), k.Help, k.Quit}
	}
	return []key.Binding{shortHelp(k.Close, "back"), shortHelp(k.Detail, "detail"), shortHelp(k.Scroll, "select"),
		shortHelp(k.Events, "events"), shortHelp(k.Export, "export"), k.Help, k.Quit}
}

func (p *blockingPage) FullHelp() [][]key.Binding { return p.c.keys.FullHelp() }

// content is the page's title lines, then the chains.
func (p *blockingPage) content() (head []string, tree []treeLine) {
	s := p.c.styles
	title := s.App.Render("Who waits for whom")
	switch {
	case p.c.reference:
		return []string{title, "", "  " + s.Muted.Render("The reference service's table records no waiters: lockctl migrate adopts it.")}, nil
	case p.data == nil:
		return []string{title, "", "  " + s.Muted.Render("reading the waits…")}, nil
	}
	b := *p.data
	deadlocks := ""
	if n := len(b.Deadlocks); n > 0 {
		deadlocks = s.Muted.Render(" · ") + s.Error.Render(plural(int64(n), "deadlock", "deadlocks"))
	}
	head = []string{title + s.Muted.Render(" — ") +
		s.Value.Render(plural(int64(b.Waiters()), "owner waiting", "owners waiting")) + s.Muted.Render(" · ") +
		s.Value.Render(plural(int64(len(b.Roots())), "root blocker", "root blockers")) + deadlocks +
		s.Muted.Render(" · esc back")}
	if b.Truncated {
		head = append(head, s.Warning.Render(fmt.Sprintf("  more than %d waits: the %d longest are shown, so some chains are cut short",
			lockview.MaxBlockingWaits, len(b.Waits))))
	}
	trees := b.Trees()
	if len(trees) == 0 {
		head = append(head, "", "  "+s.Muted.Render("nobody is waiting for a lock"))
	}
	return head, p.treeLines(trees)
}
