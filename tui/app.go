package tui

import (
	"context"
	"errors"
	"strings"
	"time"

	"charm.land/bubbles/v2/help"
	"charm.land/bubbles/v2/textinput"
	"charm.land/bubbles/v2/viewport"
	tea "charm.land/bubbletea/v2"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/lockctl/lockctl/internal/lockview"
	"github.com/lockctl/lockctl/locker"
	"github.com/lockctl/lockctl/store"
)

// Options configure the console.
type Options struct {
	Pool     *pgxpool.Pool  // reads go through internal/lockview, writes through Locker
	Locker   *locker.Locker // built with Config.Actor = the console's actor
	Server   string         // shown in the header, e.g. "127.0.0.1:5432/postgres" (never a password)
	Refresh  time.Duration  // poll interval; default 1s
	ReadOnly bool           // no actions: removed from keys and help
	Owner    string         // default owner id in the acquire form (the console's own id)
	TTL      time.Duration  // default TTL in the acquire form
	Status   func() string  // optional extra header line (the demo's statistics); called from View, must be cheap and concurrency-safe
	// WakeUps reports whether release notifications reach this console's
	// LISTEN connection (locker.Notifier.State); nil hides the indicator.
	// Called from View, like Status.
	WakeUps func() locker.WakeState
}

// pane is what fills the body under the header.
type pane int

const (
	paneTable pane = iota
	paneDetail
	paneEvents
	paneHelp
)

// flashKind colours the message line.
type flashKind int

const (
	flashInfo flashKind = iota
	flashOK
	flashError
)

// flash is the one-line result of the last action.
type flash struct {
	text string
	kind flashKind
}

// Model is the console's root model.
type Model struct {
	opts   Options
	ctx    context.Context
	keys   KeyMap
	styles Styles
	help   help.Model
	// now is this process's clock; its monotonic reading measures how long
	// ago a snapshot arrived. Golden tests fix it.
	now func() time.Time

	width, height int
	sized         bool
	tableRows     int // rows of locks the table shows

	// The query.
	order    lockview.Sort // one of visibleSorts(width)
	filter   string
	refresh  time.Duration
	paused   bool
	pausedAt time.Time // when paused: rows stop counting down at this instant

	// Polling: at most one poll in flight; see doc.go.
	seq           int  // number of the last poll sent
	inflight      bool // a poll is out
	inflightSince time.Time
	pending       bool // poll again as soon as the current one returns
	querySeq      int  // bumped when filter or sort change: older replies are dropped
	tickGen       int  // only the newest armed tick polls

	snap    snapshot
	hasSnap bool
	// caps is what the role may do, read with the first poll after each
	// (re)connection; until then every action is offered.
	caps    store.RoleCapabilities
	hasCaps bool
	// sawLockctlTable is set by the first page of lockctl's table after each
	// (re)connection: later polls skip the shape check, since a migrated
	// table does not turn back into the reference service's.
	sawLockctlTable bool
	failures        int // consecutive failed polls
	lastErr         error
	// server is where the last good poll read (server.go); leftServer and
	// leftWhy say which one the console moved away from, and why.
	server, leftServer, leftWhy string

	// Selection follows the key, not the row index.
	selKey  string
	selRank int64 // position of the selection among matching rows; -1: the last
	cursor  int   // index of the selection in snap.page.Rows, -1 if none
	topRank int64 // position of the first row on screen

	pane       pane
	detailKey  string
	detail     *detailData
	detailView viewport.Model
	events     []lockview.Event // newest first
	eventsView viewport.Model
	helpView   viewport.Model

	filtering   bool
	filterInput textinput.Model
	prevFilter  string

	confirm *confirmModel
	form    *acquireForm

	actionSeq int
	flash     flash
}

// New returns the console's model; Run runs it. Defaults: Refresh 1s, TTL
// 30s, Owner a fresh locker.NewOwnerID().
func New(opts Options) Model {
	if opts.Refresh <= 0 {
		opts.Refresh = time.Second
	}
	if opts.TTL <= 0 {
		opts.TTL = 30 * time.Second
	}
	if opts.Owner == "" {
		opts.Owner = locker.NewOwnerID()
	}
	fi := textinput.New()
	fi.Prompt = "/ "
	fi.Placeholder = "key or owner contains…"
	fi.CharLimit = 255
	m := Model{
		opts:        opts,
		ctx:         context.Background(),
		keys:        DefaultKeyMap(),
		styles:      newStyles(true),
		help:        newHelp(newStyles(true)),
		now:         time.Now,
		refresh:     opts.Refresh,
		order:       lockview.SortKey,
		cursor:      -1,
		filterInput: fi,
		detailView:  viewport.New(),
		eventsView:  viewport.New(),
		helpView:    viewport.New(),
	}
	m.keys = m.actionKeys()
	// The first poll goes out from Init.
	m.seq, m.inflight, m.inflightSince = 1, true, m.now()
	return m
}

// Run runs the console until the operator quits or ctx ends. Callers
// check CheckTerminal first, before they connect or start anything the
// console needs.
func Run(ctx context.Context, opts Options) error {
	if opts.Pool == nil || opts.Locker == nil {
		return errors.New("tui: Options.Pool and Options.Locker are required")
	}
	// Quitting cancels the polls and actions still out, so they let go of
	// their connections at once instead of at their timeouts.
	cmdCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	m := New(opts)
	m.ctx = cmdCtx
	_, err := tea.NewProgram(m, tea.WithContext(ctx)).Run()
	if errors.Is(err, tea.ErrProgramKilled) && ctx.Err() != nil {
		return nil // ended by the caller's context: a normal exit
	}
	return err
}

// Init starts the first poll, the countdown redraws and asks the terminal
// for its background colour.
func (m Model) Init() tea.Cmd {
	return tea.Batch(tea.RequestBackgroundColor, poll(m.ctx, m.opts.Pool, m.pollRequest()), frameTick())
}

// pollRequest copies what the next poll needs from the model.
func (m Model) pollRequest() pollRequest {
	n := m.tableRows
	if n == 0 {
		n = 50 // Init's poll goes out before the first size: enough for most terminals
	}
	req := pollRequest{
		seq: m.seq, querySeq: m.querySeq,
		query: lockview.ListQuery{
			Filter: m.filter, Sort: m.order, Anchor: m.selKey, Rank: int(m.selRank),
			Before: min(2*n, lockview.MaxWindow), After: min(2*n+1, lockview.MaxWindow),
			Near: m.snap.page.Span, // lockview.ListLocks ignores it after a change of order or filter
		},
		wantEvents: m.pane == paneEvents,
		wantCaps:   !m.hasCaps && !m.opts.ReadOnly,
		wantShape:  !m.sawLockctlTable,
	}
	if len(m.events) > 0 {
		req.eventsAfter = m.events[0].ID
	}
	if m.pane == paneDetail {
		req.detailKey = m.detailKey
	}
	return req
}

// requestPoll sends a poll now, or, if one is out, as soon as it returns.
func (m *Model) requestPoll() tea.Cmd {
	if m.inflight {
		m.pending = true
		return nil
	}
	m.seq++
	m.inflight, m.inflightSince = true, m.now()
	return poll(m.ctx, m.opts.Pool, m.pollRequest())
}

// armTick schedules the next poll; any tick armed before is retired.
func (m *Model) armTick(d time.Duration) tea.Cmd {
	m.tickGen++
	return pollTick(d, m.tickGen)
}

// queryChanged retires replies to the old filter or sort and polls.
func (m *Model) queryChanged() tea.Cmd {
	m.querySeq++
	return m.requestPoll()
}

// elapsed is how long ago the shown snapshot arrived, on the monotonic clock.
func (m Model) elapsed() time.Duration {
	if !m.hasSnap {
		return 0
	}
	return max(0, m.now().Sub(m.snap.receivedAt))
}

// advance is how far rows are counted down from their snapshot: the time
// since it arrived, or, while paused, up to the pause. Paused rows do not
// count down into states (expired, stealable) the database may never have
// been in: the lock may have been renewed or changed hands meanwhile.
func (m Model) advance() time.Duration {
	if !m.hasSnap {
		return 0
	}
	if m.paused {
		return max(0, m.pausedAt.Sub(m.snap.receivedAt))
	}
	return m.elapsed()
}

// layout sizes the children for the terminal; called on every resize.
func (m *Model) layout() {
	header := len(m.headerLines())
	// Header, column titles, message line, help line.
	m.tableRows = max(1, m.height-header-3)
	bodyW, bodyH := m.width, max(1, m.height-header-2)
	for _, vp := range []*viewport.Model{&m.detailView, &m.eventsView, &m.helpView} {
		vp.SetWidth(bodyW)
		vp.SetHeight(bodyH)
	}
	m.help.SetWidth(m.width)
	m.filterInput.SetWidth(max(10, m.width-40))
	if m.form != nil {
		m.form.setWidth(m.width)
	}
	m.keys.Sort.SetHelp("s", "sort: "+sortNames(visibleSorts(m.width)))
	m.ensureVisible()
	m.refreshPanes()
}

// View draws the whole screen, exactly width x height cells.
func (m Model) View() tea.View {
	var content string
	if !m.sized {
		content = "lockctl: starting…"
	} else {
		content = m.render()
	}
	v := tea.NewView(content)
	v.AltScreen = true
	return v
}

func (m Model) render() string {
	lines := m.headerLines()
	bodyH := m.height - len(lines) - 2
	var body string
	switch {
	case m.confirm != nil:
		body = m.place(m.confirm.view(m.styles, m.width, bodyH), bodyH)
	case m.form != nil:
		body = m.place(m.form.view(m.styles), bodyH)
	case m.pane == paneDetail:
		body = m.detailView.View()
	case m.pane == paneEvents:
		body = m.eventsView.View()
	case m.pane == paneHelp:
		body = m.helpView.View()
	default:
		body = m.tableView()
	}
	lines = append(lines, fitLines(body, bodyH)...)
	lines = append(lines, m.flashLine(), m.footer())
	for i, l := range lines {
		lines[i] = clip(l, m.width)
	}
	if len(lines) > m.height {
		lines = lines[:m.height]
	}
	return strings.Join(lines, "\n")
}

// fitLines splits s into exactly h lines.
func fitLines(s string, h int) []string {
	out := strings.Split(s, "\n")
	if len(out) > h {
		out = out[:h]
	}
	for len(out) < h {
		out = append(out, "")
	}
	return out
}

func (m Model) flashLine() string {
	switch m.flash.kind {
	case flashOK:
		return m.styles.OK.Render(m.flash.text)
	case flashError:
		return m.styles.Error.Render(m.flash.text)
	default:
		return m.styles.Muted.Render(m.flash.text)
	}
}

func newHelp(s Styles) help.Model {
	h := help.New()
	h.Styles = s.Help
	return h
}
