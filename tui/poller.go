package tui

import (
	"time"

	tea "charm.land/bubbletea/v2"
)

// poller is the console's schedule of polls (see doc.go): at most one in
// flight, replies numbered, the next tick armed only when the reply is in.
// What a poll reads comes from the pages (pollRequest); where it reads it
// from is the Source.
type poller struct {
	source   Source
	refresh  time.Duration
	paused   bool
	pausedAt time.Time // when paused: rows stop counting down at this instant

	seq           int  // number of the last poll sent
	inflight      bool // a poll is out
	inflightSince time.Time
	pending       bool // poll again as soon as the current one returns
	querySeq      int  // bumped when the query changes: older replies are dropped
	tickGen       int  // only the newest armed tick polls
}

// pollRequest asks every page what the next poll should read.
func (m Model) pollRequest() PollRequest {
	req := PollRequest{
		Caps:  !m.hasCaps && !m.readOnly(),
		Shape: !m.sawLockctlTable,
	}
	for id, p := range m.pages {
		if a, ok := p.(pollAsker); ok {
			a.askPoll(&req, pageID(id) == m.active)
		}
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
	return poll(m.ctx, m.source, m.seq, m.querySeq, m.pollRequest())
}

// armTick schedules the next poll; any tick armed before is retired.
func (m *Model) armTick(d time.Duration) tea.Cmd {
	m.tickGen++
	return pollTick(d, m.tickGen)
}

// queryChanged retires replies to the old query and polls.
func (m *Model) queryChanged() tea.Cmd {
	m.querySeq++
	return m.requestPoll()
}

// pageLoaded takes a poll's reply and arms the next poll: at once if one
// was asked for meanwhile, else after the interval (or a back-off).
func (m Model) pageLoaded(msg pageLoadedMsg) (Model, tea.Cmd) {
	if !m.inflight || msg.seq != m.seq {
		return m, nil // not the poll in flight: stale
	}
	m.inflight = false
	if msg.querySeq != m.querySeq { // asked under an older filter or sort
		m.pending = false
		return m, m.requestPoll()
	}
	if msg.err != nil {
		m.pollFailed(msg.err)
		m.pending = false
		return m, m.armTick(backoff(m.refresh, m.failures))
	}
	m.pollSucceeded(msg.snap)
	var cmds []tea.Cmd
	for id := range m.pages {
		cmds = append(cmds, m.toPage(pageID(id), snapshotMsg{msg.snap}))
	}
	if m.pending {
		m.pending = false
		return m, tea.Batch(append(cmds, m.requestPoll())...)
	}
	return m, tea.Batch(append(cmds, m.armTick(m.refresh))...)
}

// refreshIntervals are the steps + and - move through.
var refreshIntervals = []time.Duration{
	250 * time.Millisecond, 500 * time.Millisecond, time.Second, 2 * time.Second,
	5 * time.Second, 10 * time.Second, 30 * time.Second,
}

func (m Model) changeInterval(slower bool) (Model, tea.Cmd) {
	i := 0
	for i < len(refreshIntervals)-1 && refreshIntervals[i] < m.refresh {
		i++
	}
	if slower && refreshIntervals[i] <= m.refresh {
		i = min(i+1, len(refreshIntervals)-1)
	} else if !slower {
		i = max(i-1, 0)
	}
	m.refresh = refreshIntervals[i]
	m.flash = flash{"refreshing every " + shortDur(m.refresh), flashInfo}
	if m.inflight || m.paused {
		return m, nil // the reply arms the next tick with the new interval
	}
	return m, m.armTick(m.refresh) // retires the tick armed with the old one
}

// togglePause stops or resumes polling.
func (m Model) togglePause() (Model, tea.Cmd) {
	m.paused, m.pausedAt = !m.paused, m.now()
	if m.paused {
		m.flash = flash{"refresh paused: the data is not updated (space resumes)", flashInfo}
		return m, nil
	}
	m.flash = flash{"refresh resumed", flashInfo}
	return m, m.requestPoll()
}

// elapsed is how long ago the shown snapshot was read, on the monotonic clock.
func (m Model) elapsed() time.Duration {
	if !m.hasSnap {
		return 0
	}
	return max(0, m.now().Sub(m.snap.ReadAt))
}

// advance is how far rows are counted down from their snapshot: the time
// since it was read, or, while paused, up to the pause. Paused rows do not
// count down into states (expired, stealable) the database may never have
// been in: the lock may have been renewed or changed hands meanwhile.
func (m Model) advance() time.Duration {
	if !m.hasSnap {
		return 0
	}
	if m.paused {
		return max(0, m.pausedAt.Sub(m.snap.ReadAt))
	}
	return m.elapsed()
}
