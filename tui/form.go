package tui

import (
	"fmt"
	"strings"
	"time"

	"charm.land/bubbles/v2/key"
	"charm.land/bubbles/v2/textinput"
	tea "charm.land/bubbletea/v2"

	"github.com/lockctl/lockctl/internal/lockdb"
	"github.com/lockctl/lockctl/locker"
)

// acquireForm asks for a key, an owner and a TTL, then tries once to
// acquire (it does not wait: the console must stay responsive).
type acquireForm struct {
	inputs [3]textinput.Model // key, owner, TTL
	focus  int
	width  int // of the dialog, in cells
	err    string
}

var formLabels = [3]string{"key", "owner", "TTL"}

func newAcquireForm(s Styles, owner string, ttl time.Duration, key string, termW int) *acquireForm {
	f := &acquireForm{}
	for i := range f.inputs {
		in := textinput.New()
		in.Prompt = ""
		in.CharLimit = lockdb.MaxKeyBytes
		f.inputs[i] = in
	}
	f.setStyles(s)
	f.inputs[0].Placeholder = "e.g. billing:nightly"
	f.inputs[0].SetValue(key)
	f.inputs[1].SetValue(owner)
	f.inputs[2].SetValue(ttl.String())
	f.inputs[2].Placeholder = "e.g. 30s, 5m"
	f.setWidth(termW)
	f.inputs[0].Focus()
	return f
}

func (f *acquireForm) setStyles(s Styles) {
	for i := range f.inputs {
		f.inputs[i].SetStyles(s.Input)
	}
}

func (f *acquireForm) setWidth(termW int) {
	f.width = min(termW-2, 72)
	for i := range f.inputs {
		f.inputs[i].SetWidth(min(max(termW-16, 10), 50))
	}
}

// update forwards a message to the focused input.
func (f *acquireForm) update(msg tea.Msg) tea.Cmd {
	var cmd tea.Cmd
	f.inputs[f.focus], cmd = f.inputs[f.focus].Update(msg)
	return cmd
}

func (f *acquireForm) next(delta int) tea.Cmd {
	f.inputs[f.focus].Blur()
	f.focus = (f.focus + delta + len(f.inputs)) % len(f.inputs)
	return f.inputs[f.focus].Focus()
}

// values checks the form; the error says which field is wrong.
func (f *acquireForm) values() (keyName, owner string, ttl time.Duration, err error) {
	keyName, owner = f.inputs[0].Value(), f.inputs[1].Value()
	if err := lockdb.ValidateKey(keyName); err != nil {
		return "", "", 0, err
	}
	if err := lockdb.ValidateOwner(owner); err != nil {
		return "", "", 0, err
	}
	ttl, err = time.ParseDuration(strings.TrimSpace(f.inputs[2].Value()))
	if err != nil || ttl < time.Millisecond || ttl > locker.MaxTTL {
		return "", "", 0, fmt.Errorf("TTL %q: give a duration like 30s or 5m (1ms to %s)", f.inputs[2].Value(), locker.MaxTTL)
	}
	return keyName, owner, ttl, nil
}

func (f *acquireForm) view(s Styles) string {
	lines := []string{s.App.Render("Acquire a lock"), ""}
	for i, in := range f.inputs {
		label := s.Label.Render(fmt.Sprintf("%-6s", formLabels[i]))
		if i == f.focus {
			label = s.Key.Render(fmt.Sprintf("%-6s", formLabels[i]))
		}
		lines = append(lines, label+" "+in.View())
	}
	lines = append(lines, "")
	if f.err != "" {
		lines = append(lines, s.Error.Render(f.err), "")
	}
	lines = append(lines, s.Muted.Render("tab next field · enter acquire (one try, no waiting) · esc cancel"))
	return s.Dialog.Width(f.width).Render(strings.Join(lines, "\n"))
}

func (m Model) formKey(msg tea.KeyPressMsg) (Model, tea.Cmd) {
	f := m.form
	switch msg.String() {
	case "esc":
		m.form = nil
		m.flash = flash{"acquire cancelled", flashInfo}
		return m, nil
	case "tab", "down":
		return m, f.next(1)
	case "shift+tab", "up":
		return m, f.next(-1)
	case "enter":
		keyName, owner, ttl, err := f.values()
		if err != nil {
			f.err = safe(err.Error())
			return m, nil
		}
		m.form = nil
		m.flash = flash{fmt.Sprintf("acquiring %s for %s…", safe(keyName), safe(owner)), flashInfo}
		return m, m.send(actionRequest{kind: actAcquire, key: keyName, owner: owner, ttl: ttl})
	}
	if key.Matches(msg, m.keys.Quit) && msg.String() == "ctrl+c" {
		return m, tea.Quit
	}
	return m, f.update(msg)
}
