package tui

import (
	"fmt"
	"strings"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"
	"charm.land/lipgloss/v2"

	"github.com/lockctl/lockctl/internal/lockview"
)

// sessionsPage lists the sessions (lockctl sessions): each process that
// keeps its leases with one heartbeat, with how many it keeps and how long
// until it lapses, counted down between polls as the locks' TTLs are.
// Each poll reads them while the page is on screen. The cursor follows a
// session by id from poll to poll; x ends it (the root's confirmation).
type sessionsPage struct {
	c             common
	width, height int

	sessions []lockview.Session // nil until the first poll since opening
	listCursor
	selID int64 // the selected session's id

	out outbox
}

func newSessionsPage() *sessionsPage { return &sessionsPage{listCursor: listCursor{cursor: -1}} }

func (p *sessionsPage) Init() tea.Cmd { return nil }

func (p *sessionsPage) SetSize(width, height int) {
	p.width, p.height = width, height
	p.keepVisible(len(p.sessions), p.rows())
}

func (p *sessionsPage) takeAsks() (Component, outbox) {
	q := *p
	q.out = outbox{}
	return &q, p.out
}

func (p *sessionsPage) askPoll(req *PollRequest, active bool) {
	if active {
		req.Sessions = true
	}
}

// selectedLock: the page selects sessions, not locks; the lock actions
// stay off here.
func (p *sessionsPage) selectedLock() (lockview.ListedLock, bool) {
	return lockview.ListedLock{}, false
}

func (p *sessionsPage) selectedSession() (lockview.Session, bool) {
	if p.cursor < 0 || p.cursor >= len(p.sessions) {
		return lockview.Session{}, false
	}
	return p.sessions[p.cursor], true
}

func (p *sessionsPage) Update(msg tea.Msg) (Component, tea.Cmd) {
	q := *p
	switch msg := msg.(type) {
	case commonMsg:
		q.c = msg.common
	case pageOpenedMsg:
		if !msg.returned {
			// What it read when last on screen is old, and the countdown
			// counts from the newest poll: wait for this one's.
			q.sessions = nil
		}
		q.out.poll = true
	case snapshotMsg:
		if msg.snap.Sessions != nil {
			q.sessions = msg.snap.Sessions
			q.follow()
		}
	case tea.KeyPressMsg:
		q.key(msg)
	}
	return &q, nil
}

// rows is how many sessions fit under the title and the column titles.
func (p *sessionsPage) rows() int { return max(1, p.height-3) }

func (p *sessionsPage) key(msg tea.KeyPressMsg) {
	if p.moveBy(p.c.keys, msg, len(p.sessions), p.rows()) {
		p.selectRow(p.cursor)
	}
}

// follow puts the cursor back on the selected session after a poll; if it
// is gone (closed, ended, pruned), on the row now where it was.
func (p *sessionsPage) follow() {
	i := p.cursor
	for j, s := range p.sessions {
		if s.ID == p.selID {
			i = j
			break
		}
	}
	p.selectRow(i)
}

// selectRow puts the cursor on row i, kept within the rows.
func (p *sessionsPage) selectRow(i int) {
	p.place(i, len(p.sessions), p.rows())
	p.selID = 0
	if p.cursor >= 0 {
		p.selID = p.sessions[p.cursor].ID
	}
}

func (p *sessionsPage) ShortHelp() []key.Binding {
	k := p.c.keys
	return []key.Binding{shortHelp(k.Close, "back"), shortHelp(k.Scroll, "select"), shortHelp(k.EndSession, "end session"),
		shortHelp(k.Events, "events"), k.Help, k.Quit}
}

func (p *sessionsPage) FullHelp() [][]key.Binding { return p.c.keys.FullHelp() }

func (p *sessionsPage) View() string {
	if p.width <= 0 {
		return ""
	}
	lines := []string{p.title()}
	s := p.c.styles
	switch {
	case p.c.reference:
		lines = append(lines, "", "  "+s.Muted.Render("The reference service's table has no sessions: lockctl migrate adopts it."))
	case p.sessions == nil:
		lines = append(lines, "", "  "+s.Muted.Render("reading the sessions…"))
	case len(p.sessions) == 0:
		lines = append(lines, "", "  "+s.Muted.Render("no sessions: a process opens one to keep its leases with one heartbeat (lockctl run, locker.Session)"))
	default:
		cols := sessionColumns(p.width)
		lines = append(lines, "", "  "+s.Header.Render(titlesLine(cols)))
		for i := p.top; i < len(p.sessions) && i < p.top+p.rows(); i++ {
			lines = append(lines, p.rowView(p.sessions[i], cols, i == p.cursor))
		}
	}
	for i, l := range lines {
		lines[i] = clip(l, p.width)
	}
	return strings.Join(lines, "\n")
}

// title counts the sessions live and lapsed, as they stand on screen.
func (p *sessionsPage) title() string {
	s := p.c.styles
	t := s.App.Render("Sessions")
	if len(p.sessions) > 0 {
		live := 0
		for _, ss := range p.sessions {
			if ss.StateAfter(p.c.advance) == lockview.SessionLive {
				live++
			}
		}
		t += s.Muted.Render(" — ") + s.Value.Render(fmt.Sprintf("%d live", live))
		if lapsed := len(p.sessions) - live; lapsed > 0 {
			t += s.Muted.Render(" · ") + s.Expired.Render(fmt.Sprintf("%d lapsed", lapsed))
		}
	}
	return t + s.Muted.Render(" · each keeps a process's leases · esc back")
}

// sessionColumns lays out w cells: HOST and PID go first when the owner
// would get too few.
func sessionColumns(w int) []column {
	const minOwner = 16
	fixed := []column{{title: "ID", width: 7, right: true}, {title: "LEASES", width: 6, right: true},
		{title: "TTL LEFT", width: 13}, {title: "STATE", width: 6}}
	optional := []column{{title: "HOST", width: 16}, {title: "PID", width: 7, right: true}}
	used := 2 // cursor marker
	for _, c := range fixed {
		used += c.width + 1
	}
	var shown []column
	for _, c := range optional {
		if w-used-(c.width+1) < minOwner {
			break
		}
		shown = append(shown, c)
		used += c.width + 1
	}
	owner := column{title: "OWNER", width: max(w-used, 1)}
	if len(shown) == len(optional) {
		// Spare cells go to the owner and the host alike.
		extra := max(0, owner.width-maxOwnerWidth)
		owner.width -= extra
		shown[0].width += min(extra, maxOwnerWidth-shown[0].width)
	}
	return append(append([]column{fixed[0], owner}, shown...), fixed[1:]...)
}

// rowView draws one session as it stands now: its time left counted down
// since the poll, lapsed once none is left.
func (p *sessionsPage) rowView(ss lockview.Session, cols []column, selected bool) string {
	s := p.c.styles
	state := ss.StateAfter(p.c.advance)
	stStyle := s.Held
	if state == lockview.SessionLapsed {
		stStyle = s.Expired
	}
	cells := make([]string, len(cols))
	for i, c := range cols {
		var text string
		style := lipgloss.NewStyle()
		switch c.title {
		case "ID":
			text = fitRight(fmt.Sprint(ss.ID), c.width)
		case "OWNER":
			text = fit(safe(ss.Owner), c.width)
		case "HOST":
			text = fit(safe(ss.Host), c.width)
		case "PID":
			text = fitRight(fmt.Sprint(ss.PID), c.width)
		case "LEASES":
			text = fitRight(fmt.Sprint(ss.Leases), c.width)
		case "TTL LEFT":
			cells[i] = p.ttlCell(ss, state, c.width, selected)
			continue
		case "STATE":
			text, style = fit(string(state), c.width), stStyle
		}
		if selected {
			style = style.Inherit(s.Selected)
		}
		cells[i] = style.Render(text)
	}
	sep, marker := " ", "  "
	if selected {
		sep, marker = s.Selected.Render(" "), s.Selected.Render("▶ ")
	}
	return marker + strings.Join(cells, sep)
}

// ttlCell is a bar of the share of the session's TTL left and the time
// left; a dash once it lapsed.
func (p *sessionsPage) ttlCell(ss lockview.Session, state lockview.SessionState, w int, selected bool) string {
	s := p.c.styles
	stStyle, empty, textStyle := s.Held, s.BarEmpty, lipgloss.NewStyle()
	if selected {
		stStyle, empty, textStyle = stStyle.Inherit(s.Selected), empty.Inherit(s.Selected), textStyle.Inherit(s.Selected)
	}
	if state == lockview.SessionLapsed {
		return s.Muted.Inherit(textStyle).Render(fit("—", w))
	}
	left := ss.Remaining - p.c.advance
	var frac float64
	if ss.TTL > 0 {
		frac = float64(left) / float64(ss.TTL)
	}
	full, rest := bar(frac, w-8)
	return stStyle.Render(full) + empty.Render(rest) + textStyle.Render(" "+fitRight(shortDur(left), 7))
}
