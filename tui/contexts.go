package tui

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
