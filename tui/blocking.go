package tui

import (
	"fmt"
	"slices"
	"strings"

	"charm.land/bubbles/v2/key"
	"charm.land/bubbles/v2/viewport"
	tea "charm.land/bubbletea/v2"

	"github.com/lockctl/lockctl/internal/lockview"
	"github.com/lockctl/lockctl/store"
)

// blockingPage is who waits for whom across keys: each chain of waits
// drawn as a tree down from its root blocker (an owner that holds what
// others wait for and waits for nothing), then the deadlocks, then waits
// for keys nobody holds. Each poll reads it while it is on screen.
type blockingPage struct {
	c     common
	width int
	data  *lockview.Blocking // nil until the first poll since opening
	view  viewport.Model
	out   outbox
}

func newBlockingPage() *blockingPage { return &blockingPage{view: viewport.New()} }

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

// selectedLock: the page selects owners, not locks; the actions stay off.
func (p *blockingPage) selectedLock() (lockview.ListedLock, bool) {
	return lockview.ListedLock{}, false
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
		q.render()
		q.view.GotoTop()
		q.out.poll = true
	case snapshotMsg:
		if msg.snap.Blocking != nil {
			q.data = msg.snap.Blocking
			q.render()
		}
	case tea.KeyPressMsg:
		scroll(&q.view, q.c.keys, msg)
	}
	return &q, nil
}

func (p *blockingPage) render() {
	if p.width > 0 {
		p.view.SetContent(p.content())
	}
}

func (p *blockingPage) View() string { return p.view.View() }

func (p *blockingPage) ShortHelp() []key.Binding {
	k := p.c.keys
	return []key.Binding{shortHelp(k.Close, "back"), k.Scroll, shortHelp(k.Events, "events"), k.Help, k.Quit}
}

func (p *blockingPage) FullHelp() [][]key.Binding { return p.c.keys.FullHelp() }

func (p *blockingPage) content() string {
	s := p.c.styles
	title := s.App.Render("Who waits for whom")
	switch {
	case p.c.seed:
		return title + "\n\n  " + s.Muted.Render("The reference service's table records no waiters: lockctl migrate adopts it.")
	case p.data == nil:
		return title + "\n\n  " + s.Muted.Render("reading the waits…")
	}
	b := *p.data
	deadlocks := ""
	if n := len(b.Deadlocks); n > 0 {
		deadlocks = s.Muted.Render(" · ") + s.Error.Render(plural(int64(n), "deadlock", "deadlocks"))
	}
	lines := []string{title + s.Muted.Render(" — ") +
		s.Value.Render(plural(int64(b.Waiters()), "owner waiting", "owners waiting")) + s.Muted.Render(" · ") +
		s.Value.Render(plural(int64(len(b.Roots())), "root blocker", "root blockers")) + deadlocks +
		s.Muted.Render(" · esc back")}
	if b.Truncated {
		lines = append(lines, s.Warning.Render(fmt.Sprintf("  more than %d waits: the %d longest are shown, so some chains are cut short",
			lockview.MaxBlockingWaits, len(b.Waits))))
	}
	trees := b.Trees()
	if len(trees) == 0 {
		lines = append(lines, "", "  "+s.Muted.Render("nobody is waiting for a lock"))
	}
	for _, t := range trees {
		lines = append(lines, "")
		lines = append(lines, p.tree(t)...)
	}
	for i, l := range lines {
		lines[i] = clip(l, p.width)
	}
	return strings.Join(lines, "\n")
}

// tree draws one chain: its top line, then the waits under it.
func (p *blockingPage) tree(t lockview.BlockTree) []string {
	s := p.c.styles
	top := t.Top
	var head string
	switch t.Kind {
	case lockview.TreeRoot:
		head = s.Value.Render(safe(top.Owner)) + s.Muted.Render("  root blocker · holds "+heldKeys(top))
	case lockview.TreeDeadlock:
		ring := make([]string, 0, len(t.Deadlock)+1)
		for _, o := range append(slices.Clone(t.Deadlock), t.Deadlock[0]) {
			ring = append(ring, safe(o))
		}
		head = s.Error.Render("✗ deadlock: "+strings.Join(ring, " → ")) +
			s.Muted.Render("  (each waits for a key the next holds)")
		head += "\n" + s.Error.Render(safe(top.Owner)) + s.Muted.Render("  holds "+heldKeys(top))
	case lockview.TreeUnheld:
		head = s.Value.Render(safe(top.Owner)) + "  " + p.waitText(*top.Wait) +
			s.Muted.Render(" — nobody holds it ("+unheldWhy(top.Wait.KeyState)+"): next in line takes it")
	}
	lines := strings.Split(head, "\n")
	return p.branches(lines, top.Blocked, "")
}

// branches adds nodes under a line, indented by prefix.
func (p *blockingPage) branches(lines []string, nodes []lockview.BlockNode, prefix string) []string {
	s := p.c.styles
	for i, n := range nodes {
		elbow, next := "├─ ", "│  "
		if i == len(nodes)-1 {
			elbow, next = "└─ ", "   "
		}
		owner := s.Value.Render(safe(n.Owner))
		if n.Cycle {
			owner = s.Error.Render(safe(n.Owner))
		}
		line := s.Muted.Render(prefix+elbow) + owner + "  " + p.waitText(*n.Wait)
		switch {
		case n.Cycle:
			line += s.Error.Render("  ↑ back to " + safe(n.Owner) + ": deadlock")
		case n.Repeat:
			line += s.Muted.Render("  (its waiters are shown above)")
		}
		lines = p.branches(append(lines, line), n.Blocked, prefix+next)
	}
	return lines
}

// waitText is "waits 12s for KEY", the time counting on from the poll.
func (p *blockingPage) waitText(w lockview.Wait) string {
	s := p.c.styles
	return s.Warning.Render("waits "+wholeDur(w.Waited+p.c.advance)) + s.Muted.Render(" for ") + safe(w.Key)
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
func unheldWhy(st store.State) string {
	switch st {
	case store.StateExpired:
		return "its lease expired"
	case store.StateFree:
		return "released"
	default:
		return "no lock row"
	}
}
