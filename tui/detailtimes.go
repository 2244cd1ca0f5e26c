package tui

import (
	"fmt"
	"time"
)

// timesLines are the key's waits and holds over the page's window: their
// median and 99th percentile, and each bucket's 99th percentile as a
// sparkline.
func (p *detailPage) timesLines(d Detail) []string {
	s := p.c.styles
	lines := []string{"", s.App.Render("Waits and holds") + s.Muted.Render(" — last ") + s.Value.Render(windowName(p.win))}
	t := d.Times
	if t == nil || t.Window != p.win {
		return append(lines, "  "+s.Muted.Render("reading the last "+windowName(p.win)+"…"))
	}
	lines[1] += s.Muted.Render(fmt.Sprintf(" · sparklines: the p99 of each %s, oldest first", shortDur(t.Bucket)))
	if !t.Progress.CaughtUp {
		lines = append(lines, "  "+s.Warning.Render(fmt.Sprintf("reading the last hour's events: %d of %d so far", t.Progress.Read, t.Progress.Of)))
	}
	row := func(name string, n int, one, many string, p50, p99 time.Duration, series []time.Duration) string {
		if n == 0 {
			return "  " + s.Label.Render(fmt.Sprintf("%-6s", name)) + s.Muted.Render("none ended in the window")
		}
		return "  " + s.Label.Render(fmt.Sprintf("%-6s", name)) + s.Label.Render("p50 ") + s.Value.Render(fmt.Sprintf("%-8s", shortDur(p50))) +
			s.Label.Render("p99 ") + s.Value.Render(fmt.Sprintf("%-8s", shortDur(p99))) + s.Spark.Render(sparkline(millisOf(series))) +
			s.Muted.Render("  "+plural(int64(n), one, many))
	}
	return append(lines,
		row("wait", t.Waits, "acquire", "acquires", t.WaitP50, t.WaitP99, t.WaitSeries),
		row("hold", t.Holds, "lease", "leases", t.HoldP50, t.HoldP99, t.HoldSeries))
}

// millisOf is ds in milliseconds, for a sparkline.
func millisOf(ds []time.Duration) []int64 {
	out := make([]int64, len(ds))
	for i, d := range ds {
		out[i] = d.Milliseconds()
	}
	return out
}
