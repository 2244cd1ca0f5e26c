package tui

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"charm.land/bubbles/v2/help"
	tea "charm.land/bubbletea/v2"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/lockctl/lockctl/internal/operator"
	"github.com/lockctl/lockctl/locker"
)

// Options configure the console.
type Options struct {
	Pool   *pgxpool.Pool  // the actions' database (and the polls' when Source is nil)
	Locker *locker.Locker // built with Config.Actor = the console's actor
	// Operator force-expires, force-releases and ends delays and sessions
	// as the console's actor.
	Operator operator.Operator
	Server   string        // shown in the header, e.g. "127.0.0.1:5432/postgres" (never a password)
	Refresh  time.Duration // poll interval; default 1s
	ReadOnly bool          // no actions: removed from keys and help
	Owner    string        // default owner id in the acquire form (the console's own id)
	TTL      time.Duration // default TTL in the acquire form
	Status   func() string // optional extra header line (the demo's statistics); called from View, must be cheap and concurrency-safe
	// WakeUps reports whether release notifications reach this console's
	// LISTEN connection, and whether that is known yet
	// (locker.Notifier.Live); nil hides the indicator. Called from View,
	// like Status.
	WakeUps func() (live, known bool)
	// Source answers the polls; nil: NewPoolSource(Pool), a read of the
	// database per poll. Several consoles may share one.
	Source Source
	// ActionDone, when set, is called from an action's command once the
	// action has ended, whatever its outcome (a shared Source drops what
	// it cached, so the next poll shows the change).
	ActionDone func()
	// Context is the context Pool was opened for (its name and colour in
	// the header); the zero Context: none.
	Context Context
	// Contexts are the contexts c offers to switch to, and Connect opens
	// one by its name. Without Connect, c is not offered (the console over
	// SSH serves one database; the demo has its own).
	Contexts []Context
	Connect  func(ctx context.Context, name string) (Connection, error)
	// Close, when set, lets go of Pool and what was opened with it, once
	// the console has switched to another context or quit; nil: the
	// caller closes them, after Run.
	Close func()
	// Export offers E, which writes the page on screen to a file on this
	// machine. Off over SSH, where the file would be the server's.
	Export bool
	// Theme is the palette: ThemeAuto ("") follows the terminal's
	// background, ThemeDark and ThemeLight are used whatever it is.
	Theme Theme
}

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

// Model is the console's root: it routes messages to the page on screen
// and owns what every page shares — the size, the connection (link), the
// poller, the header, the action dialogs and the message line.
type Model struct {
	opts   Options
	ctx    context.Context
	keys   KeyMap
	styles Styles
	help   help.Model
	// now is this process's clock; its monotonic reading measures how long
	// ago a snapshot was read. Golden tests fix it.
	now func() time.Time

	width, height int
	sized         bool

	poller
	link

	pages  [pageCount]Component
	active pageID
	// back is where esc on the page on screen goes: the page a detail
	// page was opened from; pageNone: the locks page.
	back pageID

	confirm   *confirmModel
	form      *acquireForm
	picker    *contextPicker
	export    *exportPrompt
	actionSeq int
	flash     flash

	// switchSeq numbers context switches: only the latest one's
	// connection is used. closeConn closes the connection in use (nil:
	// the caller's).
	switchSeq int
	closeConn func()
}

// New returns the console's model; Run runs it. Defaults: Refresh 1s, TTL
// 30s, Owner a fresh locker.NewOwnerID(), Source a read of Pool per poll.
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
	if opts.Source == nil {
		opts.Source = NewPoolSource(opts.Pool)
	}
	styles := newStyles(opts.Theme != ThemeLight)
	m := Model{
		opts:   opts,
		ctx:    context.Background(),
		keys:   DefaultKeyMap(),
		styles: styles,
		help:   newHelp(styles),
		now:    time.Now,
		poller: poller{source: opts.Source, refresh: opts.Refresh},
		active: pageLocks,
	}
	m.pages = newPages()
	m.closeConn = opts.Close
	m.keys.Context.SetEnabled(m.canSwitch())
	m.keys.Export.SetEnabled(opts.Export)
	m.keys = m.actionKeys()
	m.share()
	// The first poll goes out from Init.
	m.seq, m.inflight, m.inflightSince = 1, true, m.now()
	return m
}

// newPages are the console's pages as they start.
func newPages() [pageCount]Component {
	return [pageCount]Component{
		pageLocks:    newLocksPage(),
		pageDetail:   newDetailPage(),
		pageEvents:   newEventsPage(),
		pageBlocking: newBlockingPage(),
		pageSessions: newSessionsPage(),
		pageHotKeys:  newHotKeysPage(),
		pageHelp:     newHelpPage(),
	}
}

// WithContext ties the console's polls and actions to ctx: they end with
// it (a session's context, when the console is served to one).
func (m Model) WithContext(ctx context.Context) Model {
	m.ctx = ctx
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
	m := New(opts).WithContext(cmdCtx)
	final, err := tea.NewProgram(m, tea.WithContext(ctx)).Run()
	if fm, ok := final.(Model); ok && fm.closeConn != nil {
		fm.closeConn() // the context switched to last
	}
	if errors.Is(err, tea.ErrProgramKilled) && ctx.Err() != nil {
		return nil // ended by the caller's context: a normal exit
	}
	return err
}

// Init starts the first poll, the countdown redraws and, with ThemeAuto,
// asks the terminal for its background colour.
func (m Model) Init() tea.Cmd {
	cmds := []tea.Cmd{poll(m.ctx, m.source, m.seq, m.querySeq, m.pollRequest()), frameTick()}
	if m.followsBackground() {
		cmds = append(cmds, tea.RequestBackgroundColor)
	}
	for _, p := range m.pages {
		if p != nil {
			cmds = append(cmds, p.Init())
		}
	}
	return tea.Batch(cmds...)
}

// common is what the pages are shown of the root's state.
func (m Model) common() common {
	return common{
		styles: m.styles, keys: m.keys, advance: m.advance(), hasSnap: m.hasSnap,
		failing: m.failures > 0, paused: m.paused, age: m.elapsed(),
		reference: m.hasSnap && m.snap.Page.Reference, readOnly: m.readOnly(), width: m.width,
	}
}

// share hands every page the root's common as it is now.
func (m *Model) share() {
	c := m.common()
	for i, p := range m.pages {
		if p != nil {
			m.pages[i], _ = p.Update(commonMsg{common: c, onScreen: pageID(i) == m.active})
		}
	}
}

// layout sizes the pages for the terminal; called on every resize. It
// returns what resizing made the pages ask (a query that no longer fits).
func (m *Model) layout() tea.Cmd {
	header := len(m.headerLines())
	// Header, message line, help line.
	bodyH := max(1, m.height-header-2)
	m.help.SetWidth(m.width)
	if m.form != nil {
		m.form.setWidth(m.width)
	}
	m.keys.Sort.SetHelp("s", "sort: "+sortNames(visibleSorts(m.width)))
	m.share()
	var cmds []tea.Cmd
	for i, p := range m.pages {
		if p == nil {
			continue
		}
		p.SetSize(m.width, bodyH)
		m.pages[i] = p
		cmds = append(cmds, m.takeAsks(pageID(i)))
	}
	return tea.Batch(cmds...)
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
	if m.width < 1 || m.height < 1 {
		return ""
	}
	lines := m.headerLines()
	bodyH := m.height - len(lines) - 2
	if bodyH < 1 {
		return m.tooSmall(len(lines) + 3)
	}
	var body string
	switch {
	case m.confirm != nil:
		body = m.place(m.confirm.view(m.styles, m.width, bodyH), bodyH)
	case m.form != nil:
		body = m.place(m.form.view(m.styles), bodyH)
	case m.picker != nil:
		body = m.place(m.pickerView(), bodyH)
	case m.export != nil:
		body = m.place(m.export.viewIn(m.styles, m.width), bodyH)
	default:
		body = m.pages[m.active].View()
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

// tooSmall is the screen of a terminal with no row left for the page:
// the connection's state and a line saying how many rows the console
// needs, as much of them as fits (the keys still work).
func (m Model) tooSmall(rows int) string {
	note := m.styles.Muted.Render(fmt.Sprintf("terminal too small: %d rows, the console needs %d", m.height, rows))
	lines := []string{note}
	if m.height > 1 {
		lines = []string{m.connLine(), note}
	}
	lines = fitLines(strings.Join(lines, "\n"), m.height)
	for i, l := range lines {
		lines[i] = clip(l, m.width)
	}
	return strings.Join(lines, "\n")
}

// fitLines splits s into exactly h lines (none when h is not positive).
func fitLines(s string, h int) []string {
	if h <= 0 {
		return nil
	}
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

// followsBackground: the palette follows the terminal's background.
func (m Model) followsBackground() bool {
	return m.opts.Theme == ThemeAuto || m.opts.Theme == ""
}

func newHelp(s Styles) help.Model {
	h := help.New()
	h.Styles = s.Help
	return h
}
