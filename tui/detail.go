package tui

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"time"

	"charm.land/bubbles/v2/key"
	"charm.land/bubbles/v2/viewport"
	tea "charm.land/bubbletea/v2"

	"github.com/lockctl/lockctl/internal/hotkeys"
	"github.com/lockctl/lockctl/internal/lockdb"
	"github.com/lockctl/lockctl/internal/lockview"
)

// detailPage is one lock: every column, its metadata, its waiters in
// queue order and its recent history, read by each poll while it is on
// screen. The actions apply to its lock.
type detailPage struct {
	c      common
	width  int
	key    string
	detail *Detail
	// holdersKnown: detail.Holders were read (a running group's).
	holdersKnown bool
	// holderCursor is the selected line of a running group's holders
	// (detailholders.go): 0 every holder, i the i-th; holderToken the
	// selected holder's token (0: every holder), which it follows from
	// poll to poll; holdersAt is the index of line 0 among the page's
	// lines (-1: none drawn).
	holderCursor int
	holderToken  int64
	holdersAt    int
	// win is the window of the key's wait and hold times (w switches it;
	// opened from the hot keys page, that page's).
	win  time.Duration
	view viewport.Model
	out  outbox
}

func newDetailPage() *detailPage {
	return &detailPage{view: viewport.New(), holdersAt: -1, win: defaultWindow}
}

func (p *detailPage) Init() tea.Cmd { return nil }

func (p *detailPage) SetSize(width, height int) {
	p.width = width
	sizeViewport(&p.view, width, height)
	p.render()
}

func (p *detailPage) takeAsks() (Component, outbox) {
	q := *p
	q.out = outbox{}
	return &q, p.out
}

func (p *detailPage) askPoll(req *PollRequest, active bool) {
	if active {
		req.DetailKey, req.HotWindow = p.key, p.win
	}
}

func (p *detailPage) selectedLock() (lockview.ListedLock, bool) {
	if p.detail == nil || p.detail.Lock == nil {
		return lockview.ListedLock{}, false
	}
	return *p.detail.Lock, true
}

func (p *detailPage) Update(msg tea.Msg) (Component, tea.Cmd) {
	q := *p
	switch msg := msg.(type) {
	case commonMsg:
		q.c = msg.common
		if msg.onScreen {
			q.render() // the countdowns
		}
	case pageOpenedMsg:
		switch {
		case msg.lock != nil:
			row := *msg.lock
			q.key, q.detail = row.Key, &Detail{Key: row.Key, Lock: &row, Holders: msg.holders}
			q.holdersKnown = msg.holdersKnown
		case msg.key != "": // a key without its row (a wait's): the poll reads it
			q.key, q.detail, q.holdersKnown = msg.key, nil, false
		}
		if msg.window > 0 {
			q.win = msg.window
		}
		q.holderCursor, q.holderToken = 0, 0
		q.render()
		q.view.GotoTop()
		q.out.poll = true
	case snapshotMsg:
		if d := msg.snap.Detail; d != nil && d.Key == q.key {
			q.detail, q.holdersKnown = d, true
			q.followHolder()
			q.render()
		}
	case tea.KeyPressMsg:
		k := q.c.keys
		switch {
		case key.Matches(msg, k.Window):
			q.win = nextOf(hotkeys.Windows, q.win)
			q.render()
			q.out.poll = true
		case q.group() && key.Matches(msg, k.Up):
			q.moveHolder(-1)
		case q.group() && key.Matches(msg, k.Down):
			q.moveHolder(1)
		default:
			scroll(&q.view, k, msg)
		}
	}
	return &q, nil
}

func (p *detailPage) render() {
	p.holdersAt = -1
	if p.width > 0 {
		p.view.SetContent(p.content())
	}
}

func (p *detailPage) View() string { return p.view.View() }

func (p *detailPage) ShortHelp() []key.Binding {
	k := p.c.keys
	row, ok := p.selectedLock()
	b := append([]key.Binding{shortHelp(k.Close, "back")}, k.delayHelp(ok && inDelay(live(row, p.c.advance).state))...)
	scrolling := k.Scroll
	if p.group() { // ↑/↓ select a holder; the pages still scroll
		_, one := p.selectedHolder()
		b = append(append(b, shortHelp(k.Holder, "select holder")), k.forceHelp(true, one)...)
		scrolling.SetHelp("pgup/pgdn", "scroll")
	} else {
		b = append(b, k.forceHelp(false, false)...)
	}
	return append(b, scrolling, shortHelp(k.Window, "window"), shortHelp(k.Events, "events"), shortHelp(k.Help, "help"), k.Quit)
}

func (p *detailPage) FullHelp() [][]key.Binding { return p.c.keys.FullHelp() }

// detailContent is the detail pane: every column of the selected lock,
// its metadata, its waiters in queue order and its recent history.
func (p *detailPage) content() string {
	s := p.c.styles
	d := p.detail
	if p.key == "" {
		return ""
	}
	title := s.App.Render("Lock ") + s.Value.Render(safe(p.key))
	lines := []string{title}
	if d == nil {
		return title + "\n\n  " + s.Muted.Render("reading the lock…")
	}
	field := func(name, value string) {
		lines = append(lines, "  "+s.Label.Render(fmt.Sprintf("%-13s", name))+value)
	}
	if d.Lock == nil {
		lines = append(lines, "", "  "+s.Muted.Render("this key has no lock row (pruned, or never acquired)"))
		if !p.c.reference { // its waiters, as the blocking page's waits for it
			lines = append(append(lines, p.timesLines(*d)...), p.queueAndHistory(*d)...)
		}
		return strings.Join(lines, "\n")
	}
	r := live(*d.Lock, p.c.advance)
	st := s.stateStyle(r.state).Render(stateLabel(r.state, true))
	switch {
	case p.c.reference && r.state == lockdb.StateHeld: // no TTL recorded
		st += s.Muted.Render(fmt.Sprintf("  %s left", shortDur(r.Remaining)))
	case grouped(r.LockInfo) && (r.state == lockdb.StateHeld || r.state == lockdb.StateExpiring):
		st += s.Muted.Render(fmt.Sprintf("  %s left, until the last holder's lease ends", shortDur(r.Remaining)))
	case r.state == lockdb.StateHeld, r.state == lockdb.StateExpiring:
		st += s.Muted.Render(fmt.Sprintf("  %s left of %s", shortDur(r.Remaining), shortDur(r.TTL)))
	case r.state == lockdb.StateExpired:
		st += s.Muted.Render(fmt.Sprintf("  expired %s ago; the next acquirer steals it", shortDur(-r.Remaining)))
	case r.state == lockdb.StateDelayed:
		st += s.Muted.Render(fmt.Sprintf("  %s more: nobody is granted it before then", shortDur(delayLeft(r.ListedLock, p.c.advance))))
	case r.state == lockdb.StateKept:
		st += s.Muted.Render(fmt.Sprintf("  until %s (%s more), its hold's at-least point: nobody is granted it before then",
			r.KeptUntil.UTC().Format(time.TimeOnly), shortDur(delayLeft(r.ListedLock, p.c.advance))))
	}
	field("state", st)
	switch {
	case grouped(r.LockInfo):
		hs, known := p.selectedHolders()
		field("mode", modeText(r.LockInfo))
		field("owner", s.Group.Render(groupOwner(r.LockInfo, liveHolders(hs, p.c.advance), known)[0]))
	case r.state == lockdb.StateFree:
		field("owner", safe(r.Owner)+s.Muted.Render("  (last holder)"))
	default:
		field("owner", safe(r.Owner))
	}
	if v, ok := electionValue(r.Metadata); ok {
		if r.state == lockdb.StateFree || r.state == lockdb.StateExpired || r.state == lockdb.StateDelayed || r.state == lockdb.StateKept {
			field("election", s.Muted.Render("nobody leads: the next candidate queued is elected"))
		} else {
			field("election", "leader "+safe(v)+s.Muted.Render("  term "+shownToken(r.Token, p.c.reference)+", its fencing token"))
		}
	}
	grant := r.GrantKind
	if r.PreviousOwner != nil {
		grant += fmt.Sprintf(" from %s", safe(*r.PreviousOwner))
		if r.PreviousToken != nil {
			grant += " (token " + token(*r.PreviousToken) + ")"
		}
	}
	tok := shownToken(r.Token, p.c.reference)
	if !p.c.reference {
		tok += s.Muted.Render(fmt.Sprintf("  (%d)", r.Token)) // what scripts and logs carry
	}
	field("token", tok+s.Muted.Render("  "+grant))
	field("expires at", utcFull(r.ExpiresAt)+s.Muted.Render("  database clock"))
	if p.c.reference {
		lines = append(lines, "", "  "+s.Muted.Render("The reference service's table records only these; "+
			"lockctl migrate adopts it with every lease intact."))
		return strings.Join(lines, "\n")
	}
	if grouped(r.LockInfo) {
		field("TTL", s.Muted.Render("each holder's own"))
	} else {
		field("TTL", shortDur(r.TTL))
	}
	switch {
	case r.KeptUntil != nil:
		field("at least", shortDur(r.KeptUntil.Sub(r.AcquiredAt))+s.Muted.Render("  from the grant: kept until ")+utcFull(*r.KeptUntil))
	case r.DelayUntil != nil:
		field("lock-delay", shortDur(r.LockDelay)+s.Muted.Render("  until ")+utcFull(*r.DelayUntil))
	case r.LockDelay > 0:
		field("lock-delay", shortDur(r.LockDelay)+s.Muted.Render("  after the lease ends without a release"))
	default:
		field("lock-delay", s.Muted.Render("none"))
	}
	field("queue", plural(int64(len(d.Waiters)), "waiter", "waiters"))
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
	if runningGroup(r.Lock) {
		lines = append(lines, p.holderLines(r, len(lines))...)
	}
	lines = append(lines, p.timesLines(*d)...)
	return strings.Join(append(lines, p.queueAndHistory(*d)...), "\n")
}

// queueAndHistory are the key's waiters in queue order and its recent
// events.
func (p *detailPage) queueAndHistory(d Detail) []string {
	s := p.c.styles
	lines := []string{"", s.App.Render(fmt.Sprintf("Waiters (%d, in queue order: 1 is served next)", len(d.Waiters)))}
	if len(d.Waiters) == 0 {
		lines = append(lines, "  "+s.Muted.Render("nobody is waiting"))
	}
	for i, w := range d.Waiters {
		upgrade := ""
		if w.UpgradeFrom != nil {
			// A holder waiting for the key alone: it keeps that lease until then.
			upgrade = s.Expiring.Render("upgrade from token "+token(*w.UpgradeFrom)) + "  "
		}
		lines = append(lines, fmt.Sprintf("  %2d. %s  %s%s", i+1, safe(w.Owner), upgrade,
			s.Muted.Render("waiting "+wholeDur(w.Waited+p.c.advance))))
	}
	lines = append(lines, "", s.App.Render("Recent events (newest first)"))
	if len(d.Events) == 0 {
		lines = append(lines, "  "+s.Muted.Render("none recorded"))
	}
	for _, e := range d.Events {
		lines = append(lines, clip("  "+eventLine(s, e, false), p.width))
	}
	return lines
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
