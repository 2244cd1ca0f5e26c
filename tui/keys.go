package tui

import (
	"charm.land/bubbles/v2/key"

	"github.com/lockctl/lockctl/store"
)

// KeyMap is every key the console answers to. Bindings that do not apply
// are disabled, which also hides them from help: the actions with
// --read-only, on the reference service's unmigrated table, and those the
// role may not do (Model.actionKeys).
type KeyMap struct {
	Up, Down, PageUp, PageDown, Home, End key.Binding
	Scroll                                key.Binding // help only: the keys that scroll a pane
	// Holder is help only: ↑/↓ on a shared or semaphore key's detail page
	// select one of its holders, on which the actions then act.
	Holder key.Binding

	Filter   key.Binding
	Sort     key.Binding
	Slower   key.Binding
	Faster   key.Binding
	Pause    key.Binding
	Detail   key.Binding
	Events   key.Binding
	Blocking key.Binding
	Sessions key.Binding
	HotKeys  key.Binding
	// Window switches the hot keys page's window (and the detail page's
	// times'): 1m, 15m, 1h.
	Window   key.Binding
	Context  key.Binding // switch to another context (Options.Connect)
	Export   key.Binding // write the page on screen to a file (Options.Export)
	Help     key.Binding
	Close    key.Binding
	Quit     key.Binding
	Acquire  key.Binding
	Renew    key.Binding
	Expire   key.Binding
	Release  key.Binding
	EndDelay key.Binding
	// Revoke asks the selected lease's holder to let go (lockctl revoke).
	Revoke key.Binding
	// EndSession is x on the sessions page, where x has no lock to expire:
	// ending a session force-expires every lease it keeps.
	EndSession key.Binding

	// In dialogs and forms.
	Yes     key.Binding
	No      key.Binding
	Switch  key.Binding // move focus between buttons or fields
	Confirm key.Binding // enter: the focused button, or submit
}

// DefaultKeyMap is the console's standard keys.
func DefaultKeyMap() KeyMap {
	return KeyMap{
		Up:       key.NewBinding(key.WithKeys("up", "k"), key.WithHelp("↑/k", "up")),
		Down:     key.NewBinding(key.WithKeys("down", "j"), key.WithHelp("↓/j", "down")),
		PageUp:   key.NewBinding(key.WithKeys("pgup", "ctrl+b"), key.WithHelp("pgup", "page up")),
		PageDown: key.NewBinding(key.WithKeys("pgdown", "ctrl+f"), key.WithHelp("pgdn", "page down")),
		Home:     key.NewBinding(key.WithKeys("home", "g"), key.WithHelp("g/home", "first row")),
		End:      key.NewBinding(key.WithKeys("end", "G"), key.WithHelp("G/end", "last row")),
		Scroll:   key.NewBinding(key.WithKeys("up", "down", "pgup", "pgdown"), key.WithHelp("↑/↓ pgup/pgdn", "scroll")),
		Holder:   key.NewBinding(key.WithKeys("up", "down"), key.WithHelp("↑/↓", "select holder (shared key's detail)")),
		Filter:   key.NewBinding(key.WithKeys("/"), key.WithHelp("/", "filter by key or owner")),
		Sort:     key.NewBinding(key.WithKeys("s"), key.WithHelp("s", "sort: key, TTL, token, held, waiters")),
		Slower:   key.NewBinding(key.WithKeys("+", "="), key.WithHelp("+", "refresh less often")),
		Faster:   key.NewBinding(key.WithKeys("-", "_"), key.WithHelp("-", "refresh more often")),
		Pause:    key.NewBinding(key.WithKeys("space"), key.WithHelp("space", "pause/resume refresh")),
		Detail:   key.NewBinding(key.WithKeys("enter"), key.WithHelp("enter", "details, waiters, history")),
		Events:   key.NewBinding(key.WithKeys("e"), key.WithHelp("e", "event log (all locks)")),
		Blocking: key.NewBinding(key.WithKeys("b"), key.WithHelp("b", "who waits for whom (blocking)")),
		Sessions: key.NewBinding(key.WithKeys("S"), key.WithHelp("S", "sessions (processes keeping leases)")),
		HotKeys:  key.NewBinding(key.WithKeys("h"), key.WithHelp("h", "hot keys (where the waiting goes)")),
		Window:   key.NewBinding(key.WithKeys("w"), key.WithHelp("w", "window: 1m, 15m, 1h (hot keys, detail)")),
		Context:  key.NewBinding(key.WithKeys("c"), key.WithHelp("c", "switch context (database)")),
		Export:   key.NewBinding(key.WithKeys("E"), key.WithHelp("E", "export this page to CSV or JSON")),
		Help:     key.NewBinding(key.WithKeys("?"), key.WithHelp("?", "help")),
		Close:    key.NewBinding(key.WithKeys("esc"), key.WithHelp("esc", "close / back")),
		Quit:     key.NewBinding(key.WithKeys("q", "ctrl+c"), key.WithHelp("q", "quit")),
		Acquire:  key.NewBinding(key.WithKeys("a"), key.WithHelp("a", "acquire a lock")),
		Renew:    key.NewBinding(key.WithKeys("r"), key.WithHelp("r", "renew selected (extend its TTL)")),
		Expire:   key.NewBinding(key.WithKeys("x"), key.WithHelp("x", "force-expire selected (asks first)")),
		Release:  key.NewBinding(key.WithKeys("d"), key.WithHelp("d", "force-release selected (asks first)")),
		EndDelay: key.NewBinding(key.WithKeys("u"), key.WithHelp("u", "end the lock-delay (asks first)")),
		Revoke:   key.NewBinding(key.WithKeys("v"), key.WithHelp("v", "revoke: ask the holder to let go")),
		Yes:      key.NewBinding(key.WithKeys("y", "Y"), key.WithHelp("y", "yes, do it")),
		No:       key.NewBinding(key.WithKeys("n", "N", "esc"), key.WithHelp("n/esc", "no, cancel")),
		Switch:   key.NewBinding(key.WithKeys("tab", "shift+tab", "left", "right"), key.WithHelp("tab", "next field")),
		Confirm:  key.NewBinding(key.WithKeys("enter"), key.WithHelp("enter", "choose / submit")),
		EndSession: key.NewBinding(key.WithKeys("x"),
			key.WithHelp("x", "end session (on the sessions page)")),
	}
}

// withActions enables or disables the actions.
func (k KeyMap) withActions(on bool) KeyMap {
	for _, b := range []*key.Binding{&k.Acquire, &k.Renew, &k.Expire, &k.Release, &k.EndDelay, &k.Revoke, &k.EndSession} {
		b.SetEnabled(on)
	}
	return k
}

// withCapabilities enables the actions the role may do and disables the
// rest: acquire and renew need Hold, force-expire and force-release Force,
// ending a lock-delay EndDelay, revoking Revoke, ending a session EndSession.
func (k KeyMap) withCapabilities(c store.RoleCapabilities) KeyMap {
	k.Acquire.SetEnabled(c.Hold)
	k.Renew.SetEnabled(c.Hold)
	k.Expire.SetEnabled(c.Force)
	k.Release.SetEnabled(c.Force)
	k.EndDelay.SetEnabled(c.EndDelay)
	k.Revoke.SetEnabled(c.Revoke)
	k.EndSession.SetEnabled(c.EndSession)
	return k
}

// ShortHelp is the one-line help under the table; delayed: the selected
// key is in its lock-delay; group: it is held shared or as a semaphore.
func (k KeyMap) ShortHelp(delayed, group bool) []key.Binding {
	b := []key.Binding{
		shortHelp(k.Help, "help"), shortHelp(k.Filter, "filter"), shortHelp(k.Sort, "sort"),
		shortHelp(k.Detail, "detail"), shortHelp(k.Events, "events")}
	b = append(b, k.delayHelp(delayed)...)
	b = append(b, k.forceHelp(group, false)...)
	return append(b, shortHelp(k.Acquire, "acquire"), shortHelp(k.Blocking, "blocking"), shortHelp(k.HotKeys, "hot keys"), shortHelp(k.Sessions, "sessions"),
		shortHelp(k.Context, "context"), shortHelp(k.Export, "export"), shortHelp(k.Pause, "pause"), shortHelp(k.Quit, "quit"))
}

// forceHelp is the footer's expire, release and renew. On a group's row
// they are the key's, which has no lease of its own to renew: expire and
// release act on every holder. On one holder (the detail page's
// selection) they act on that holder's lease.
func (k KeyMap) forceHelp(group, holder bool) []key.Binding {
	switch {
	case holder:
		return []key.Binding{shortHelp(k.Expire, "expire holder"), shortHelp(k.Release, "release holder"),
			shortHelp(k.Renew, "renew holder")}
	case group:
		return []key.Binding{shortHelp(k.Expire, "expire all"), shortHelp(k.Release, "release all")}
	}
	return []key.Binding{shortHelp(k.Expire, "expire"), shortHelp(k.Release, "release"), shortHelp(k.Renew, "renew")}
}

// delayHelp is u's footer entry on a delayed key: ending the delay is the
// one action that applies to it, so it comes before the others, which a
// narrow footer drops first (a role that may not end a delay has u
// disabled, and the footer leaves it out).
func (k KeyMap) delayHelp(delayed bool) []key.Binding {
	if !delayed {
		return nil
	}
	return []key.Binding{shortHelp(k.EndDelay, "end delay")}
}

// FullHelp is the `?` screen, in columns.
func (k KeyMap) FullHelp() [][]key.Binding {
	return [][]key.Binding{
		{k.Up, k.Down, k.PageUp, k.PageDown, k.Home, k.End, k.Filter, k.Sort, k.Window},
		{k.Detail, k.Holder, k.Events, k.Blocking, k.HotKeys, k.Sessions, k.Context, k.Export, k.Pause, k.Slower, k.Faster, k.Help, k.Close, k.Quit},
		{k.Expire, k.Release, k.Revoke, k.EndDelay, k.Renew, k.Acquire, k.EndSession},
	}
}
