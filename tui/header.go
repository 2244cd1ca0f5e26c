package tui

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/lockctl/lockctl/internal/lockdb"
	"github.com/lockctl/lockctl/internal/lockview"
)

// sortLabel says what an order puts first.
func sortLabel(s lockview.Sort) string {
	switch s {
	case lockview.SortTTL:
		return "TTL (expired and soonest expiring first, free last)"
	case lockview.SortToken:
		return "token (newest grant first)"
	case lockview.SortHeldFor:
		return "held for (longest held first)"
	case lockview.SortWaiters:
		return "waiters (most waiters first)"
	default:
		return "key"
	}
}

// nextSort is the order after cur among the visible ones.
func nextSort(visible []lockview.Sort, cur lockview.Sort) lockview.Sort {
	if len(visible) == 0 {
		return lockview.SortKey
	}
	i := slices.Index(visible, cur)
	return visible[(i+1)%len(visible)]
}

// sortNames lists orders for the help: "key, TTL, waiters".
func sortNames(sorts []lockview.Sort) string {
	names := make([]string, len(sorts))
	for i, s := range sorts {
		names[i] = map[lockview.Sort]string{lockview.SortKey: "key", lockview.SortTTL: "TTL", lockview.SortToken: "token",
			lockview.SortHeldFor: "held", lockview.SortWaiters: "waiters"}[s]
	}
	return strings.Join(names, ", ")
}

// headerLines are the lines above every page: server and connection,
// totals, contention rates (when there is room), the optional status line,
// and the home page's sort and filter bar.
func (m Model) headerLines() []string {
	lines := []string{m.connLine()}
	// While the database fails, the error's detail takes the place of the
	// least useful line, so the layout (and the table) does not move.
	switch {
	case m.height >= 20 && m.failures > 0:
		lines = append(lines, m.totalsLine(), m.errLine())
	case m.height >= 20:
		lines = append(lines, m.totalsLine(), m.ratesLine())
	case m.failures > 0:
		lines = append(lines, m.errLine())
	default:
		lines = append(lines, m.totalsLine())
	}
	if m.opts.Status != nil {
		lines = append(lines, m.styles.Muted.Render(safe(m.opts.Status())))
	}
	if h, ok := m.pages[pageLocks].(headerLiner); ok {
		lines = append(lines, h.headerLine())
	}
	return lines
}

// connState describes the connection in a few words, styled by severity.
func (m Model) connState() string {
	s := m.styles
	switch {
	case m.failures > 0:
		verb := "reconnecting"
		if !connectionProblem(m.lastErr) {
			verb = "failing" // the server answers, with an error retrying will not fix by itself
		}
		return s.Error.Render(fmt.Sprintf("✗ %s, attempt %d: %s", verb, m.failures, errHead(m.lastErr)))
	case m.inflight && m.now().Sub(m.inflightSince) >= slowAfter:
		return s.Warning.Render(fmt.Sprintf("◐ slow: no reply for %s", wholeDur(m.now().Sub(m.inflightSince))))
	case !m.hasSnap:
		return s.Muted.Render("◌ connecting…")
	case m.snap.Latency >= slowLatency:
		return s.Warning.Render("◐ slow")
	default:
		return s.Live.Render("● live")
	}
}

func (m Model) connLine() string {
	s := m.styles
	narrow := m.width < 100
	parts := []string{s.App.Render("lockctl")}
	if badge := m.contextBadge(); badge != "" {
		parts = append(parts, badge)
	}
	if !narrow {
		parts = append(parts, s.Value.Render(safe(m.opts.Server)))
	}
	parts = append(parts, m.serverParts()...)
	parts = append(parts, m.connState())
	if m.hasSnap && m.snap.Page.InRecovery {
		parts = append(parts, s.Warning.Render("replica — read-only"))
	}
	if m.hasSnap && m.snap.Page.Reference {
		parts = append(parts, s.Warning.Render(referenceNotice))
	}
	switch {
	case m.opts.Context.ReadOnly:
		parts = append(parts, s.Warning.Render("read-only context"))
	case m.opts.ReadOnly:
		parts = append(parts, s.Warning.Render("--read-only"))
	}
	if m.opts.WakeUps != nil {
		// Narrow, only the problem is worth the room.
		switch live, known := m.opts.WakeUps(); {
		case live && !narrow:
			parts = append(parts, s.Label.Render("wake-ups live"))
		case !known && !narrow:
			parts = append(parts, s.Muted.Render("wake-ups: checking…"))
		case !live && known && m.width >= 120:
			parts = append(parts, s.Warning.Render("wake-ups not live (see --notify-dsn)"))
		case !live && known:
			parts = append(parts, s.Warning.Render("no wake-ups"))
		}
	}
	if m.paused {
		parts = append(parts, s.Warning.Render("⏸ paused"))
	} else {
		parts = append(parts, s.Label.Render("every ")+s.Value.Render(shortDur(m.refresh)))
	}
	if m.hasSnap && m.failures == 0 { // while failing, errLine gives the age
		parts = append(parts, s.Label.Render("poll ")+s.Value.Render(shortDur(m.snap.Latency)))
		age := m.elapsed()
		ageText := "data " + wholeDur(age) + " old"
		if m.failures > 0 || m.paused || age > 3*m.refresh+pollTimeout {
			parts = append(parts, s.Warning.Render(ageText+" (stale)"))
		} else {
			parts = append(parts, s.Label.Render(ageText))
		}
	}
	if narrow {
		parts = append(parts, s.Value.Render(safe(m.opts.Server)))
	}
	return strings.Join(parts, s.Muted.Render(" · "))
}

// delayedCount is " · delayed N" after the expired count, when keys sit
// in their lock-delay (a state of its own: neither expired nor free).
func delayedCount(s Styles, n int64) string {
	if n == 0 {
		return ""
	}
	return s.Muted.Render(" · ") + s.Label.Render("delayed ") + s.Delayed.Render(fmt.Sprint(n))
}

func (m Model) totalsLine() string {
	s := m.styles
	if !m.hasSnap {
		return s.Muted.Render("no data yet")
	}
	t := m.liveTotals()
	num := func(st interface{ Render(...string) string }, n int64) string { return st.Render(fmt.Sprint(n)) }
	var counted string
	if age := m.countsAge(); age > 0 {
		counted = s.Muted.Render(" · counted " + wholeDur(age) + " ago")
	}
	if m.width < 100 {
		return s.Value.Render(fmt.Sprint(t.All)) + s.Label.Render(" locks: ") +
			num(s.Held, t.Held) + s.Label.Render(" held, ") + num(s.Expiring, t.Expiring) + s.Label.Render(" expiring, ") +
			num(s.Expired, t.Expired) + s.Label.Render(" expired, ") + num(s.Free, t.Free) + s.Label.Render(" free · ") +
			s.Value.Render(fmt.Sprint(t.Waiting)) + s.Label.Render(" waiting") + counted
	}
	parts := []string{
		s.Label.Render("locks ") + s.Value.Render(fmt.Sprint(t.All)),
		s.Label.Render("held ") + num(s.Held, t.Held) + s.Muted.Render(" (") + num(s.Expiring, t.Expiring) + s.Muted.Render(" expiring)"),
		s.Label.Render("expired ") + num(s.Expired, t.Expired) + delayedCount(s, t.Delayed),
		s.Label.Render("free ") + num(s.Free, t.Free),
		s.Label.Render("waiting ") + s.Value.Render(fmt.Sprint(t.Waiting)) + s.Muted.Render(" on "+plural(t.WaitedKeys, "key", "keys")),
	}
	line := strings.Join(parts, s.Muted.Render(" · ")) + counted
	if v := m.snap.Page.ServerVersion; v != "" && m.width >= 100 {
		pg := s.Muted.Render("PostgreSQL " + safe(strings.Fields(v)[0]))
		if gap := m.width - width(line) - width(pg); gap > 0 {
			line += strings.Repeat(" ", gap) + pg
		}
	}
	return line
}

// referenceNotice says why the console shows the reference service's table
// without actions.
const referenceNotice = "not migrated: run lockctl migrate to adopt — read-only"

func (m Model) ratesLine() string {
	s := m.styles
	if m.hasSnap && m.snap.Page.Reference {
		return s.Muted.Render("last minute: — (the reference service's table keeps no history)")
	}
	if !m.hasSnap || len(m.snap.Rates.Grants) == 0 {
		return s.Muted.Render("last minute: —")
	}
	r := m.snap.Rates
	item := func(name string, b []int64) string {
		return s.Label.Render(name+" ") + s.Value.Render(fmt.Sprint(lockview.Sum(b))) + " " + s.Spark.Render(sparkline(b))
	}
	items := []string{item("grants", r.Grants), item("steals", r.Steals), item("hand-offs to waiters", r.Handoffs)}
	if h := m.snap.HandOff; h.Count > 0 {
		// Only once the log shows a hand-off (it needs logged releases).
		items = append(items, s.Label.Render("hand-off ")+s.Value.Render(handOffText(h.Median)))
	}
	return s.Label.Render("last minute: ") + strings.Join(items, s.Muted.Render(" · "))
}

// countsAge is how old the counts of the totals line are when they were
// kept from an earlier poll (lockview.Counts: a large table is counted only
// every so often); 0 when they are as fresh as the rows. The waiters are
// read on every poll.
func (m Model) countsAge() time.Duration {
	c := m.snap.Page.Counts
	if c.TakenAt.IsZero() {
		return 0
	}
	age := c.Age(m.snap.Page.DBNow)
	if age < time.Second {
		return 0
	}
	return age + m.elapsed()
}

// liveTotals are the poll's counts with the loaded rows that have since
// changed state on screen (counted down past expiry) moved to their new
// state, so the header never says "expired 0" next to an expired row.
func (m Model) liveTotals() lockview.Totals {
	t := m.snap.Page.Totals
	adv := m.advance()
	for _, r := range m.snap.Page.Rows {
		was, now := r.State(), live(r, adv).state
		if was != now {
			countState(&t, was, -1)
			countState(&t, now, +1)
		}
	}
	return t
}

// countState adds d to st's count; Held includes Expiring.
func countState(t *lockview.Totals, st lockdb.State, d int64) {
	switch st {
	case lockdb.StateHeld:
		t.Held += d
	case lockdb.StateExpiring:
		t.Held += d
		t.Expiring += d
	case lockdb.StateExpired:
		t.Expired += d
	case lockdb.StateDelayed, lockdb.StateKept:
		t.Delayed += d
	case lockdb.StateFree:
		t.Free += d
	}
}

// errLine explains the last failed poll and what is on screen meanwhile.
func (m Model) errLine() string {
	s := m.styles
	// The cause first: a narrow line keeps it and loses the rest.
	parts := []string{s.Error.Render(errMeaning(m.lastErr))}
	if m.hasSnap {
		parts = append(parts, s.Warning.Render(fmt.Sprintf("last good data %s old", wholeDur(m.elapsed()))))
	}
	parts = append(parts, s.Muted.Render("retrying every "+shortDur(backoff(m.refresh, m.failures))))
	return s.Error.Render("✗ ") + strings.Join(parts, s.Muted.Render(" · "))
}

// handOffText is a hand-off latency: sub-millisecond ones (a release that
// hands the lease to its queue) as "<1ms".
func handOffText(d time.Duration) string {
	if d < time.Millisecond {
		return "<1ms"
	}
	return d.Round(time.Millisecond).String()
}

// serverParts name the server a multi-host DSN led to ("on host:port") and
// the one the console left after a failover, with why.
func (m Model) serverParts() []string {
	s := m.styles
	var parts []string
	if m.server != "" && (strings.Contains(m.opts.Server, ",") || m.leftServer != "") {
		parts = append(parts, s.Label.Render("on ")+s.Value.Render(safe(m.server)))
	}
	if m.leftServer != "" {
		left := "left " + m.leftServer
		if m.leftWhy != "" {
			left += ": " + m.leftWhy
		}
		parts = append(parts, s.Warning.Render(safe(left)))
	}
	return parts
}
