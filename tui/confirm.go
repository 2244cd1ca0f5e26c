package tui

import (
	"fmt"
	"strings"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"
	"charm.land/lipgloss/v2"

	"github.com/lockctl/lockctl/internal/lockview"
)

// confirmModel asks before a destructive action. It names the key, owner
// and token the operator saw; the action applies only to that token. Ending
// a session names the session instead (an id is never reused). Its
// default is No: enter without moving the focus cancels.
type confirmModel struct {
	kind    actionKind
	key     string
	owner   string
	token   int64
	session *lockview.Session // actEndSession's
	// slot is set when the action takes one holder's lease of a shared or
	// semaphore key (owner and token are the holder's); group, when it
	// takes every holder's by the group's token, says who they are
	// ("shared · 3 holders").
	slot     int32
	group    string
	kept     bool // actEndDelay's key is kept by an at-least hold, not a lock-delay
	yesFocus bool
}

func (c confirmModel) verb() string {
	switch c.kind {
	case actExpire:
		return "Force-expire"
	case actEndDelay:
		if c.kept {
			return "End the at-least hold of"
		}
		return "End the lock-delay of"
	case actEndSession:
		return "End session"
	case actRevoke:
		return "Revoke"
	}
	return "Force-release"
}

// subject is what the action ends, for the dialog's title.
func (c confirmModel) subject() string {
	switch {
	case c.slot > 0:
		return "this holder"
	case c.group != "":
		return "every holder of this key"
	}
	return "this lock"
}

func (c confirmModel) consequence() string {
	switch {
	case c.slot > 0 && c.kind == actExpire:
		return "This holder's lease ends now: its renewals and fenced writes fail.\nThe key's other holders keep theirs."
	case c.slot > 0:
		return "This holder's lease is freed now, as if it had released it: its\nrenewals and fenced writes fail. The key's other holders keep theirs."
	case c.group != "" && c.kind == actExpire:
		return "Every holder's lease ends now, those that joined since included:\ntheir renewals and fenced writes fail; the next acquirer takes the key."
	case c.group != "":
		return "Every holder's lease is freed now, those that joined since included,\nas if each had released it: their renewals and fenced writes fail."
	}
	switch c.kind {
	case actExpire:
		return "Its lease ends now: the holder's renewals and fenced writes fail,\nand the next acquirer takes the key over with a new token."
	case actEndDelay:
		return "The key goes now to the head of its queue, or the next acquirer:\ndo it only if its last holder has surely stopped writing."
	case actRevoke:
		return "Its holder is asked to let go: its keepalive learns it, with your\nname, at its next renewal. It keeps the lease until it releases it\n(lockctl revoke --force-after sets a deadline)."
	case actEndSession:
		return "Every lease it keeps is force-expired now (each with its lock-delay):\nits process's renewals and fenced writes fail, and it learns at\nits next heartbeat that it lost them."
	}
	return "The lock is freed now, as if its holder had released it;\nthe holder's renewals and fenced writes fail."
}

// guard says when nothing happens: what the action is fenced by.
func (c confirmModel) guard() string {
	switch c.kind {
	case actEndDelay:
		return "Nothing happens if the delay has ended meanwhile."
	case actEndSession:
		return "Nothing happens if the session has ended meanwhile."
	}
	switch {
	case c.slot > 0:
		return fmt.Sprintf("Nothing happens if token %s no longer holds a lease of the key.", token(c.token))
	case c.group != "":
		return fmt.Sprintf("Nothing happens if the group of token %s has ended meanwhile.", token(c.token))
	}
	return fmt.Sprintf("Nothing happens if token %s is no longer the current grant.", token(c.token))
}

func (c confirmModel) view(s Styles, termW, bodyH int) string {
	w := min(max(termW-6, 30), 76)
	field := func(name, value string) string {
		return s.Label.Render(fmt.Sprintf("%-7s", name)) + s.Value.Render(clip(value, w-10))
	}
	yesText := fmt.Sprintf("Yes, %s (y)", strings.ToLower(c.verb()))
	if c.kind == actEndDelay || c.kind == actEndSession {
		yesText = "Yes, end it (y)"
	}
	yes := s.Button.Render(yesText)
	no := s.Focused.Render("No (n/esc)")
	if c.yesFocus {
		yes = s.Focused.Render(yesText)
		no = s.Button.Render("No (n/esc)")
	}
	buttons := lipgloss.JoinHorizontal(lipgloss.Top, no, "  ", yes)
	owner := safe(c.owner)
	if c.group != "" {
		owner = c.group
	}
	fields := []string{field("key", safe(c.key)), field("owner", owner), field("token", fmt.Sprintf("%s  (%d)", token(c.token), c.token))}
	if c.slot > 0 {
		fields = append(fields, field("slot", fmt.Sprint(c.slot)))
	}
	title := c.verb() + " " + c.subject() + "?"
	if ss := c.session; ss != nil {
		fields = []string{field("id", fmt.Sprint(ss.ID)), field("owner", safe(ss.Owner)),
			field("host", fmt.Sprintf("%s  pid %d", safe(ss.Host), ss.PID)), field("leases", fmt.Sprint(ss.Leases))}
		title = "End this session?"
	}
	var lines []string
	if bodyH >= 16 { // room to explain
		lines = append(append([]string{s.Danger.Render(title), ""}, fields...),
			"", s.Muted.Render(c.consequence()),
			s.Muted.Render(c.guard()),
			"", buttons)
	} else { // small terminal: what and which, then the buttons
		lines = append(append([]string{s.Danger.Render(title)}, fields...), buttons)
	}
	body := strings.Join(lines, "\n")
	return s.Dialog.Width(w).Render(body)
}

func (m Model) confirmKey(msg tea.KeyPressMsg) (Model, tea.Cmd) {
	c := *m.confirm
	k := m.keys
	switch {
	case key.Matches(msg, k.Yes):
		return m.confirmed(c)
	case key.Matches(msg, k.No):
		m.confirm = nil
		m.flash = flash{strings.ToLower(c.verb()) + " cancelled: nothing changed", flashInfo}
		return m, nil
	case key.Matches(msg, k.Switch):
		c.yesFocus = !c.yesFocus
		m.confirm = &c
		return m, nil
	case key.Matches(msg, k.Confirm):
		if c.yesFocus {
			return m.confirmed(c)
		}
		m.confirm = nil
		m.flash = flash{strings.ToLower(c.verb()) + " cancelled: nothing changed", flashInfo}
		return m, nil
	case key.Matches(msg, k.Quit) && msg.String() == "q":
		return m, nil // q in a dialog must not quit by accident
	}
	return m, nil
}

func (m Model) confirmed(c confirmModel) (Model, tea.Cmd) {
	m.confirm = nil
	if ss := c.session; ss != nil {
		subject := fmt.Sprintf("session %d", ss.ID)
		m.flash = flash{"ending " + subject + "…", flashInfo}
		return m, m.send(actionRequest{kind: c.kind, key: subject, session: ss.ID})
	}
	m.flash = flash{fmt.Sprintf("%s %s (token %s)…", strings.ToLower(c.verb()), safe(c.key), token(c.token)), flashInfo}
	return m, m.send(actionRequest{kind: c.kind, key: c.key, owner: c.owner, token: c.token, slot: c.slot})
}
