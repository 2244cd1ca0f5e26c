package tui

import (
	"context"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/lockctl/lockctl/internal/operator"
	"github.com/lockctl/lockctl/locker"
)

// Context is a named database the console is connected through (the CLI's
// contexts): the header shows its name in its colour, always.
type Context struct {
	Name string
	// Color is a colour name (contexts.ColorNames) or #rrggbb; "" neutral.
	Color string
	// ReadOnly: the console offers no action, as with Options.ReadOnly.
	ReadOnly bool
	// Database is what it connects to, as it may be shown (a DSN with its
	// password masked, or service=NAME).
	Database string
}

// Connection is a context opened by Options.Connect: what the console
// polls and acts through there.
type Connection struct {
	Pool     *pgxpool.Pool
	Locker   *locker.Locker // nil only with a read-only Context
	Operator operator.Operator
	Server   string
	WakeUps  func() (live, known bool)
	Context  Context
	// Close lets go of the pool and what was started with it (the
	// notifier); the console calls it, from a command, once it has
	// switched away, and Run once the console has quit. It must not block
	// for long (cli.CloseWithin).
	Close func()
}

// contextBadge is the header's name of the context, in its colour; "" for
// a console connected through none.
func (m Model) contextBadge() string {
	c := m.opts.Context
	if c.Name == "" {
		return ""
	}
	return m.styles.contextBadge(c.Color).Render(safe(c.Name))
}

// readOnly: no action is offered, by --read-only or the context's say.
func (m Model) readOnly() bool { return m.opts.ReadOnly || m.opts.Context.ReadOnly }

// canSwitch: the console offers c, to switch to another context.
func (m Model) canSwitch() bool { return m.opts.Connect != nil && len(m.opts.Contexts) > 0 }

// openPicker puts the context picker on screen, on the context in use.
func (m Model) openPicker() (Model, tea.Cmd) {
	p := &contextPicker{}
	for i, c := range m.opts.Contexts {
		if c.Name == m.opts.Context.Name {
			p.cursor = i
		}
	}
	m.picker = p
	return m, nil
}

// pickerKey moves the picker's cursor, switches on enter, closes on esc
// (or q, which does not quit from a dialog).
func (m Model) pickerKey(msg tea.KeyPressMsg) (Model, tea.Cmd) {
	p := *m.picker
	k, n := m.keys, len(m.opts.Contexts)
	switch {
	case key.Matches(msg, k.Up):
		p.cursor = (p.cursor - 1 + n) % n
	case key.Matches(msg, k.Down):
		p.cursor = (p.cursor + 1) % n
	case key.Matches(msg, k.Close, k.Context) || msg.String() == "q":
		m.picker = nil
		return m, nil
	case key.Matches(msg, k.Confirm):
		m.picker = nil
		return m.switchTo(m.opts.Contexts[p.cursor])
	}
	m.picker = &p
	return m, nil
}

// switchTo opens c's connection in a command; contextSwitched takes it.
func (m Model) switchTo(c Context) (Model, tea.Cmd) {
	if c.Name == m.opts.Context.Name {
		m.flash = flash{"already on context " + safe(c.Name), flashInfo}
		return m, nil
	}
	m.switchSeq++
	m.flash = flash{"switching to context " + safe(c.Name) + "…", flashInfo}
	return m, connectContext(m.ctx, m.opts.Connect, c.Name, m.switchSeq)
}

// contextSwitched moves the console to the connection a switch opened:
// the polls, the actions and every page start afresh on it, and the one
// it leaves is closed. A connection opened for a switch since superseded
// is closed unused.
func (m Model) contextSwitched(msg contextSwitchedMsg) (Model, tea.Cmd) {
	switch {
	case msg.seq != m.switchSeq:
		return m, closeConnection(msg.conn.Close)
	case msg.err != nil:
		m.flash = flash{"✗ context " + safe(msg.name) + " not opened, still on the one before: " + errMeaning(msg.err), flashError}
		return m, nil
	}
	leaving := m.closeConn
	c := msg.conn
	m.opts.Pool, m.opts.Locker, m.opts.Operator = c.Pool, c.Locker, c.Operator
	m.opts.Server, m.opts.WakeUps, m.opts.Context = c.Server, c.WakeUps, c.Context
	m.closeConn = c.Close
	m.source = NewPoolSource(c.Pool)
	m.link = link{}
	m.confirm, m.form = nil, nil
	m.pages, m.active, m.back = newPages(), pageLocks, pageNone
	// Whatever the old connection still answers is dropped: its polls by
	// number, its actions' results by number too (the poll after them
	// reads the new database).
	m.seq++
	m.querySeq++
	m.actionSeq++
	m.tickGen++
	m.inflight, m.pending, m.paused = false, false, false
	m.keys = m.actionKeys()
	m.flash = flash{"✓ switched to context " + safe(c.Context.Name), flashOK}
	return m, tea.Batch(m.layout(), m.requestPoll(), closeConnection(leaving))
}

// contextPicker lists Options.Contexts to switch to.
type contextPicker struct {
	cursor int
}

// connectContext opens a context's connection.
func connectContext(ctx context.Context, connect func(context.Context, string) (Connection, error), name string, seq int) tea.Cmd {
	return func() tea.Msg {
		conn, err := connect(ctx, name)
		return contextSwitchedMsg{seq: seq, name: name, conn: conn, err: err}
	}
}

// closeConnection lets go of a connection switched away from (nil: the
// caller's, which it closes).
func closeConnection(closeFn func()) tea.Cmd {
	if closeFn == nil {
		return nil
	}
	return func() tea.Msg {
		closeFn()
		return nil
	}
}
