package tui

import (
	"fmt"
	"strings"
	"time"

	"charm.land/bubbles/v2/key"
	"charm.land/bubbles/v2/viewport"
	tea "charm.land/bubbletea/v2"

	"github.com/lockctl/lockctl/internal/lockdb"
	"github.com/lockctl/lockctl/internal/lockview"
	"github.com/lockctl/lockctl/locker"
)

// eventsPage is the event log of all locks, newest first, as it grows:
// each poll while it is on screen reads the events after the newest it has.
type eventsPage struct {
	c      common
	width  int
	events []lockview.Event // newest first, at most eventsKept
	view   viewport.Model
	out    outbox
}

// eventsKept bounds the log the page keeps.
const eventsKept = 500

func newEventsPage() *eventsPage { return &eventsPage{view: viewport.New()} }

func (p *eventsPage) Init() tea.Cmd { return nil }

func (p *eventsPage) SetSize(width, height int) {
	p.width = width
	sizeViewport(&p.view, width, height)
	p.render()
}

func (p *eventsPage) takeAsks() (Component, outbox) {
	q := *p
	q.out = outbox{}
	return &q, p.out
}

func (p *eventsPage) askPoll(req *PollRequest, active bool) {
	if !active {
		return
	}
	req.Events = true
	if len(p.events) > 0 {
		req.EventsAfter = p.events[0].ID
	}
}

func (p *eventsPage) Update(msg tea.Msg) (Component, tea.Cmd) {
	q := *p
	switch msg := msg.(type) {
	case commonMsg:
		q.c = msg.common
		if msg.onScreen {
			q.render()
		}
	case pageOpenedMsg:
		q.render()
		q.out.poll = true
	case snapshotMsg:
		q.add(msg.snap.Events)
	case tea.KeyPressMsg:
		scroll(&q.view, q.c.keys, msg)
	}
	return &q, nil
}

// add puts new events on top. An operator scrolled down into the log
// keeps the lines they are reading where they are (one event, one line).
func (p *eventsPage) add(events []lockview.Event) {
	if len(events) == 0 {
		return
	}
	keepLine := -1
	if p.view.YOffset() > 0 {
		keepLine = p.view.YOffset() + len(events)
	}
	p.events = append(append([]lockview.Event{}, events...), p.events...)
	if len(p.events) > eventsKept {
		p.events = p.events[:eventsKept]
	}
	p.render()
	if keepLine >= 0 {
		p.view.SetYOffset(keepLine)
	}
}

func (p *eventsPage) render() {
	if p.width > 0 {
		p.view.SetContent(p.content())
	}
}

func (p *eventsPage) View() string { return p.view.View() }

func (p *eventsPage) ShortHelp() []key.Binding {
	k := p.c.keys
	return []key.Binding{shortHelp(k.Close, "back"), k.Scroll, shortHelp(k.Export, "export"), k.Help, k.Quit}
}

func (p *eventsPage) FullHelp() [][]key.Binding { return p.c.keys.FullHelp() }

// content is the log, one event a line.
func (p *eventsPage) content() string {
	s := p.c.styles
	lines := []string{s.App.Render("Event log") + s.Muted.Render(" — all locks, newest first, times in UTC (database clock) · esc back")}
	if len(p.events) == 0 {
		lines = append(lines, "", "  "+s.Muted.Render("no events yet"))
	}
	for _, e := range p.events {
		lines = append(lines, clip(eventLine(s, e, true), p.width))
	}
	return strings.Join(lines, "\n")
}

// cycleWords is a refused wait's cycle, "cycle A waits for x → B waits for
// y → A" (each owner waits for its key, which the next holds or is queued
// ahead for), owners and keys escaped.
func cycleWords(cycle []locker.DeadlockStep) string {
	parts := make([]string, 0, len(cycle)+1)
	for _, st := range cycle {
		parts = append(parts, safe(st.Owner)+" waits for "+safe(st.Key))
	}
	return "cycle " + strings.Join(append(parts, safe(cycle[0].Owner)), " → ")
}

// eventLine is one event: time, kind, key (when withKey), owner, token,
// actor and what the detail adds.
func eventLine(s Styles, e lockview.Event, withKey bool) string {
	kind := fmt.Sprintf("%-20s", e.Kind)
	switch e.Kind {
	case lockdb.EventStolen, lockdb.EventForceExpired, lockdb.EventForceReleased, lockdb.EventSessionEnded:
		kind = s.Expired.Render(kind)
	case lockdb.EventStaleWriteRejected, lockdb.EventGaveUp:
		kind = s.Warning.Render(kind)
	case lockdb.EventReleased:
		kind = s.Free.Render(kind)
	case lockdb.EventDelayEnded:
		kind = s.Delayed.Render(kind)
	case lockdb.EventDeadlockRefused:
		kind = s.Error.Render(kind)
	default:
		kind = s.Held.Render(kind)
	}
	parts := []string{s.Muted.Render(utcClock(e.OccurredAt)), kind}
	if id, ok := e.SessionID(); ok {
		// Of no one key: the session it ended stands where the key would.
		parts = append(parts, s.Value.Render(fmt.Sprintf("session %d", id)))
	} else if withKey {
		parts = append(parts, s.Value.Render(safe(e.Key)))
	}
	if e.Owner != nil {
		parts = append(parts, "owner "+safe(*e.Owner))
	}
	if e.Token != nil {
		parts = append(parts, "token "+token(*e.Token))
	}
	if e.PreviousOwner != nil {
		prev := "from " + safe(*e.PreviousOwner)
		if e.PreviousToken != nil {
			prev += " (token " + token(*e.PreviousToken) + ")"
		}
		parts = append(parts, prev)
	}
	if slot, ok := e.Detail["slot"]; ok { // one holder's lease of a shared or semaphore key
		parts = append(parts, s.Muted.Render(fmt.Sprintf("slot %v", slot)))
	}
	if w, ok := e.Detail["waited_ms"]; ok {
		parts = append(parts, s.Muted.Render(fmt.Sprintf("after waiting %vms", w)))
	}
	if d, ok := e.Detail["delay_until"]; ok {
		// A force action that started a lock-delay, or the delay an
		// operator ended.
		until := safe(fmt.Sprint(d))
		if t, err := time.Parse(time.RFC3339Nano, fmt.Sprint(d)); err == nil {
			until = utcClock(t)
		}
		parts = append(parts, s.Delayed.Render("lock-delay until "+until))
	}
	if cycle, ok := e.DeadlockCycle(); ok {
		parts = append(parts, s.Error.Render(cycleWords(cycle)))
	}
	if _, ok := e.SessionID(); ok {
		parts = append(parts, s.Muted.Render(fmt.Sprintf("host %s pid %v, %v leases force-expired",
			safe(fmt.Sprint(e.Detail["host"])), e.Detail["pid"], e.Detail["leases"])))
	}
	if r, ok := e.Detail["reason"]; ok {
		parts = append(parts, s.Muted.Render("reason "+safe(fmt.Sprint(r))))
	}
	if res, ok := e.Detail["resource"]; ok {
		parts = append(parts, s.Muted.Render("resource "+safe(fmt.Sprint(res))))
	}
	parts = append(parts, s.Muted.Render("by "+e.By(safe)))
	return strings.Join(parts, "  ")
}
