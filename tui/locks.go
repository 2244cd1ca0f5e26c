package tui

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"charm.land/bubbles/v2/key"
	"charm.land/bubbles/v2/textinput"
	tea "charm.land/bubbletea/v2"

	"github.com/lockctl/lockctl/internal/lockview"
)

// locksPage is the home page: the table of locks, its sort and filter,
// and the selection the actions and the detail page start from. Each poll
// reads its window (askPoll), whichever page is on screen, since the
// header's totals come with it.
type locksPage struct {
	c             common
	width, height int
	tableRows     int // rows of locks the table shows

	order  lockview.Sort // one of visibleSorts(width)
	filter string

	filtering   bool
	filterInput textinput.Model
	prevFilter  string

	page lockview.Page // the last good poll's window
	// holders are the last poll's holders of the group rows it read
	// (PollRequest.HolderRows), by key.
	holders map[string][]lockview.Holder
	// Selection follows the key, not the row index.
	selKey  string
	selRank int64 // position of the selection among matching rows; -1: the last
	cursor  int   // index of the selection in page.Rows, -1 if none
	topRank int64 // position of the first row on screen
	// awaiting: the filter or order changed and no reply to the new query
	// is in; the rows shown are the old query's, so none is selected (enter
	// and the actions would act on a row the new query may not list).
	awaiting bool

	out outbox
}

func newLocksPage() *locksPage {
	fi := textinput.New()
	fi.Prompt = "/ "
	fi.Placeholder = "key or owner contains…"
	fi.CharLimit = 255
	return &locksPage{order: lockview.SortKey, cursor: -1, filterInput: fi}
}

func (p *locksPage) Init() tea.Cmd { return nil }

func (p *locksPage) SetSize(width, height int) {
	p.width, p.height = width, height
	p.tableRows = max(1, height-1) // under the column titles
	p.filterInput.SetWidth(max(10, width-40))
	if !slices.Contains(visibleSorts(width), p.order) {
		// Its column no longer fits: an order nobody can see is a puzzle.
		p.order = lockview.SortKey
		p.queryChanged()
		p.out.flash = &flash{"sorted by key: the column of the previous order does not fit this width", flashInfo}
	}
	p.ensureVisible()
}

func (p *locksPage) takeAsks() (Component, outbox) {
	q := *p
	q.out = outbox{}
	return &q, p.out
}

func (p *locksPage) askPoll(req *PollRequest, active bool) {
	n := p.tableRows
	if n == 0 {
		n = 50 // Init's poll goes out before the first size: enough for most terminals
	}
	if active {
		req.HolderRows = n
	}
	req.Query = lockview.ListQuery{
		Filter: p.filter, Sort: p.order, Anchor: p.selKey, Rank: int(p.selRank),
		Before: min(2*n, lockview.MaxWindow), After: min(2*n+1, lockview.MaxWindow),
		// lockview.ListLocks ignores these after a change of order or filter.
		Near: p.page.Span, Order: p.page.Order,
	}
}

// orderAge is how old the order of the rows shown is when it was kept
// from an earlier poll (lockview.Order: a large table's TTL, token and
// held-for orders are read only every so often, the rows on every poll);
// 0 when the poll that read the rows ordered them.
func (p *locksPage) orderAge() time.Duration {
	o := p.page.Order
	if o.TakenAt.IsZero() {
		return 0
	}
	age := o.Age(p.page.DBNow)
	if age < time.Second {
		return 0
	}
	return age + p.c.age
}

func (p *locksPage) selectedLock() (lockview.ListedLock, bool) { return p.selected() }

func (p *locksPage) capturing() bool { return p.filtering }

func (p *locksPage) Update(msg tea.Msg) (Component, tea.Cmd) {
	q := *p
	switch msg := msg.(type) {
	case commonMsg:
		q.c = msg.common
		q.filterInput.SetStyles(q.c.styles.Input)
	case snapshotMsg: // replies to an older query never come here (poller.go)
		q.page, q.holders, q.awaiting = msg.snap.Page, msg.snap.Holders, false
		q.followSelection()
	case pageOpenedMsg:
		if q.missingHolders() { // polls read none while the table was off screen
			q.out.poll = true
		}
	case tea.KeyPressMsg:
		return &q, q.key(msg)
	default: // cursor blinks and pastes of the filter
		if q.filtering {
			return &q, q.filterInputUpdate(msg)
		}
	}
	return &q, nil
}

func (p *locksPage) key(msg tea.KeyPressMsg) tea.Cmd {
	if p.filtering {
		return p.filterKey(msg)
	}
	k := p.c.keys
	switch {
	case key.Matches(msg, k.Close):
		if p.filter != "" {
			p.filter = ""
			p.filterInput.SetValue("")
			p.queryChanged()
		}
	case key.Matches(msg, k.Up):
		p.move(-1)
	case key.Matches(msg, k.Down):
		p.move(1)
	case key.Matches(msg, k.PageUp):
		p.move(-p.tableRows)
	case key.Matches(msg, k.PageDown):
		p.move(p.tableRows)
	case key.Matches(msg, k.Home):
		p.jump(0)
	case key.Matches(msg, k.End):
		p.jump(-1)
	case key.Matches(msg, k.Sort):
		p.order = nextSort(visibleSorts(p.width), p.order)
		p.out.flash = &flash{"sorted by " + sortLabel(p.order), flashInfo}
		p.queryChanged()
	case key.Matches(msg, k.Filter):
		p.filtering = true
		p.prevFilter = p.filter
		p.filterInput.SetValue(p.filter)
		p.filterInput.CursorEnd()
		return p.filterInput.Focus()
	}
	return nil
}

func (p *locksPage) filterKey(msg tea.KeyPressMsg) tea.Cmd {
	switch msg.String() {
	case "enter":
		p.filtering = false
		p.filterInput.Blur()
		return nil
	case "esc":
		p.filtering = false
		p.filterInput.Blur()
		if p.filter != p.prevFilter {
			p.filter = p.prevFilter
			p.queryChanged()
		}
		return nil
	}
	return p.filterInputUpdate(msg)
}

// filterInputUpdate passes msg to the filter's input; a new value is a
// new query from the first row.
func (p *locksPage) filterInputUpdate(msg tea.Msg) tea.Cmd {
	var cmd tea.Cmd
	p.filterInput, cmd = p.filterInput.Update(msg)
	if v := p.filterInput.Value(); v != p.filter {
		p.filter = v
		p.selRank = 0
		p.queryChanged()
	}
	return cmd
}

// queryChanged asks for the new filter or order and withholds the
// selection until its reply is in.
func (p *locksPage) queryChanged() {
	p.out.newQuery = true
	p.awaiting, p.cursor = true, -1
}

func (p *locksPage) View() string { return p.tableView() }

// ShortHelp is the footer under the table, or the filter's while it is typed.
func (p *locksPage) ShortHelp() []key.Binding {
	k := p.c.keys
	if p.filtering {
		return []key.Binding{shortHelp(k.Close, "undo filter"), shortHelp(k.Confirm, "keep filter")}
	}
	row, ok := p.selected()
	return k.ShortHelp(ok && inDelay(live(row, p.c.advance).state), ok && runningGroup(row.Lock))
}

func (p *locksPage) selectedHolders() ([]lockview.Holder, bool) {
	row, ok := p.selected()
	if !ok {
		return nil, false
	}
	hs, known := p.holders[row.Key]
	return hs, known
}

// selectedHolder: the table selects keys; one holder is selected on the
// detail page.
func (p *locksPage) selectedHolder() (lockview.Holder, bool) { return lockview.Holder{}, false }

func (p *locksPage) FullHelp() [][]key.Binding { return p.c.keys.FullHelp() }

// headerLine is the header's last line: the sort, the filter and where the
// selection is; the filter's input while it is typed.
func (p *locksPage) headerLine() string {
	s := p.c.styles
	if p.filtering {
		return p.filterInput.View()
	}
	parts := []string{s.Label.Render("sort ") + s.Value.Render(sortLabel(p.order))}
	if age := p.orderAge(); age > 0 {
		parts = append(parts, s.Muted.Render("order "+wholeDur(age)+" ago"))
	}
	if p.filter != "" {
		parts = append(parts, s.Label.Render("filter ")+s.Value.Render(fmt.Sprintf("%q", p.filter)))
	}
	if p.c.paused && p.c.hasSnap {
		parts = append(parts, s.Warning.Render("⏸ paused: rows frozen as of "+
			wholeDur(p.c.age)+" ago (space resumes)"))
	}
	if p.c.hasSnap {
		switch {
		case p.awaiting:
			parts = append(parts, s.Muted.Render("reading…"))
		case p.page.Matching == 0 && p.filter != "":
			parts = append(parts, s.Warning.Render("no lock matches the filter (esc clears it)"))
		case p.page.Matching == 0:
			parts = append(parts, s.Muted.Render("no locks"))
		case p.cursor >= 0:
			parts = append(parts, s.Label.Render(fmt.Sprintf("row %d of %d", p.selRank+1, p.page.Matching)))
		}
	}
	line := strings.Join(parts, s.Muted.Render(" · "))
	if width(line) > p.width { // the order's explanation is in the footer too
		name, _, _ := strings.Cut(sortLabel(p.order), " (")
		parts[0] = s.Label.Render("sort ") + s.Value.Render(name)
		line = strings.Join(parts, s.Muted.Render(" · "))
	}
	return line
}

// shortHelp is b with a shorter description, for a footer.
func shortHelp(b key.Binding, desc string) key.Binding {
	b.SetHelp(b.Help().Key, desc)
	return b
}
