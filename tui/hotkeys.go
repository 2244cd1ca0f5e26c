package tui

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"

	"github.com/lockctl/lockctl/internal/hotkeys"
	"github.com/lockctl/lockctl/internal/lockview"
)

// hotRows is how many of a window's hottest keys a poll reads: more than
// a screen holds, few enough that the ranking costs nothing to hand over.
const hotRows = 100

// defaultWindow is the window the hot keys page and the detail page's
// times open on.
var defaultWindow = 15 * time.Minute

// hotKeysPage ranks the keys by where the waiting went over a window (1m,
// 15m or 1h; w switches): total time waited, waits, steals, hand-offs and
// force actions, each with its series as a sparkline; s changes the
// column ranked by. Each poll reads it while it is on screen (from the
// source's hotkeys.Tracker). The cursor follows its key from poll to
// poll; enter opens the key's detail page, with its times over the same
// window.
type hotKeysPage struct {
	c             common
	width, height int
	win           time.Duration
	by            hotkeys.Column
	data          *hotkeys.Ranking // nil until a poll of the window and column on screen
	listCursor                     // over data.Rows
	selKey        string
	out           outbox
}

func newHotKeysPage() *hotKeysPage {
	return &hotKeysPage{win: defaultWindow, by: hotkeys.ByWaitTime, listCursor: listCursor{cursor: -1}}
}

func (p *hotKeysPage) Init() tea.Cmd { return nil }

func (p *hotKeysPage) SetSize(width, height int) {
	p.width, p.height = width, height
	p.keepVisible(len(p.ranked()), p.rows())
}

func (p *hotKeysPage) takeAsks() (Component, outbox) {
	q := *p
	q.out = outbox{}
	return &q, p.out
}

func (p *hotKeysPage) askPoll(req *PollRequest, active bool) {
	if active {
		req.HotKeys, req.HotWindow, req.HotBy = true, p.win, p.by
	}
}

func (p *hotKeysPage) window() time.Duration { return p.win }

// selectedLock: the page selects keys, not lock rows; the actions stay off.
func (p *hotKeysPage) selectedLock() (lockview.ListedLock, bool) {
	return lockview.ListedLock{}, false
}

// selectedKey is the key under the cursor: enter opens it.
func (p *hotKeysPage) selectedKey() (string, bool) {
	if p.cursor < 0 {
		return "", false
	}
	return p.selKey, true
}

func (p *hotKeysPage) Update(msg tea.Msg) (Component, tea.Cmd) {
	q := *p
	switch msg := msg.(type) {
	case commonMsg:
		q.c = msg.common
	case pageOpenedMsg:
		q.out.poll = true
	case snapshotMsg:
		if r := msg.snap.HotKeys; r != nil && r.Window == q.win && r.By == q.by {
			q.data = r
			q.follow()
		}
	case tea.KeyPressMsg:
		q.key(msg)
	}
	return &q, nil
}

func (p *hotKeysPage) key(msg tea.KeyPressMsg) {
	k := p.c.keys
	switch {
	case key.Matches(msg, k.Window):
		p.win = nextOf(hotkeys.Windows, p.win)
		p.data, p.out.poll = nil, true
	case key.Matches(msg, k.Sort):
		p.by = nextOf(hotkeys.Columns, p.by)
		p.data, p.out.poll = nil, true
	case p.moveBy(k, msg, len(p.ranked()), p.rows()):
		p.selectRow(p.cursor)
	}
}

// nextOf is the value after cur in all, round again after the last.
func nextOf[T comparable](all []T, cur T) T {
	return all[(slices.Index(all, cur)+1)%len(all)]
}

func (p *hotKeysPage) ranked() []hotkeys.Row {
	if p.data == nil {
		return nil
	}
	return p.data.Rows
}

// rows is how many keys fit under the title lines and the column titles.
func (p *hotKeysPage) rows() int { return max(1, p.height-3) }

// follow puts the cursor back on the selected key after a poll; if it is
// no longer ranked, on the row now where it was.
func (p *hotKeysPage) follow() {
	i := p.cursor
	if j := slices.IndexFunc(p.ranked(), func(r hotkeys.Row) bool { return r.Key == p.selKey }); j >= 0 {
		i = j
	}
	p.selectRow(max(i, 0))
}

// selectRow puts the cursor on row i, kept within the rows.
func (p *hotKeysPage) selectRow(i int) {
	rows := p.ranked()
	p.place(i, len(rows), p.rows())
	p.selKey = ""
	if p.cursor >= 0 {
		p.selKey = rows[p.cursor].Key
	}
}

func (p *hotKeysPage) ShortHelp() []key.Binding {
	k := p.c.keys
	b := []key.Binding{shortHelp(k.Close, "back")}
	if p.cursor >= 0 {
		b = append(b, shortHelp(k.Detail, "detail"), shortHelp(k.Scroll, "select"))
	}
	return append(b, shortHelp(k.Window, "window"), shortHelp(k.Sort, "rank by"), shortHelp(k.Export, "export"), k.Help, k.Quit)
}

func (p *hotKeysPage) FullHelp() [][]key.Binding { return p.c.keys.FullHelp() }

func (p *hotKeysPage) View() string {
	if p.width <= 0 {
		return ""
	}
	s := p.c.styles
	lines := []string{p.title()}
	switch {
	case p.c.reference:
		lines = append(lines, "", "  "+s.Muted.Render("The reference service's table logs no events: lockctl migrate adopts it."))
	case p.data == nil:
		lines = append(lines, "", "  "+s.Muted.Render("reading the last "+windowName(p.win)+"…"))
	default:
		lines = append(lines, p.subtitle())
		if len(p.data.Rows) == 0 {
			lines = append(lines, "", "  "+s.Muted.Render("no waits, steals, hand-offs or force actions in the last "+windowName(p.win)))
			break
		}
		keyW, cols := hotLayout(p.width, p.by)
		lines = append(lines, "  "+s.Header.Render(hotTitles(keyW, cols, p.by)))
		for i := p.top; i < len(p.data.Rows) && i < p.top+p.rows(); i++ {
			lines = append(lines, p.rowView(p.data.Rows[i], keyW, cols, i == p.cursor))
		}
	}
	for i, l := range lines {
		lines[i] = clip(l, p.width)
	}
	return strings.Join(lines, "\n")
}

// title names the window, the column ranked by and how many keys are.
func (p *hotKeysPage) title() string {
	s := p.c.styles
	t := s.App.Render("Hot keys") + s.Muted.Render(" — last ") + s.Value.Render(windowName(p.win)) +
		s.Muted.Render(" · ranked by ") + s.Value.Render(p.by.String())
	if p.data != nil {
		t += s.Muted.Render(" · ") + s.Value.Render(plural(int64(p.data.Keys), "key", "keys"))
	}
	return t + s.Muted.Render(" · esc back")
}

// subtitle is the window's totals, then what a sparkline's points are,
// or, while the source is still reading the hour, how far it got.
func (p *hotKeysPage) subtitle() string {
	s := p.c.styles
	tot := p.data.Total
	sep := s.Muted.Render(" · ")
	t := "  " + s.Value.Render(shortDur(tot.WaitTime)) + s.Muted.Render(" waited") + sep +
		s.Value.Render(plural(tot.Waits, "wait", "waits")) + sep + s.Value.Render(plural(tot.Steals, "steal", "steals")) + sep +
		s.Value.Render(plural(tot.Handoffs, "hand-off", "hand-offs")) + sep + s.Value.Render(plural(tot.Forces, "force", "forces"))
	if pr := p.data.Progress; !pr.CaughtUp {
		return t + sep + s.Warning.Render(fmt.Sprintf("reading the hour: %d of %d events so far", pr.Read, pr.Of))
	}
	return t + sep + s.Muted.Render(fmt.Sprintf("sparklines: %d × %s", hotkeys.Points, shortDur(p.data.Bucket)))
}

// windowName is a window as the page names it: 1m, 15m, 1h.
func windowName(d time.Duration) string {
	if d >= time.Hour && d%time.Hour == 0 {
		return fmt.Sprintf("%dh", d/time.Hour)
	}
	return fmt.Sprintf("%dm", d/time.Minute)
}
