package tui

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/charmbracelet/x/ansi"

	"github.com/lockctl/lockctl/internal/fencetoken"
	"github.com/lockctl/lockctl/internal/textsafe"
)

// token is a fencing token as a person reads it: EPOCH·COUNT ("1·25"),
// what --token accepts back.
func token(t int64) string { return fencetoken.Format(t) }

// shownToken is token, except on the reference service's table, whose
// tokens are epoch milliseconds with no epoch and count to split.
func shownToken(t int64, reference bool) string {
	if reference {
		return strconv.FormatInt(t, 10)
	}
	return token(t)
}

// safe makes database text drawable: control and escape sequences become
// visible escapes (textsafe), never bytes the terminal would act on.
func safe(s string) string { return textsafe.Escape(s) }

// fit truncates s to w display cells with an ellipsis and pads it to w.
func fit(s string, w int) string {
	if w <= 0 {
		return ""
	}
	s = ansi.Truncate(s, w, "…")
	if pad := w - ansi.StringWidth(s); pad > 0 {
		s += strings.Repeat(" ", pad)
	}
	return s
}

// fitRight is fit, right-aligned.
func fitRight(s string, w int) string {
	if w <= 0 {
		return ""
	}
	s = ansi.Truncate(s, w, "…")
	if pad := w - ansi.StringWidth(s); pad > 0 {
		s = strings.Repeat(" ", pad) + s
	}
	return s
}

// clip truncates a possibly styled line to w cells.
func clip(s string, w int) string { return ansi.Truncate(s, w, "…") }

// width is s's display width, ignoring styling.
func width(s string) int { return ansi.StringWidth(s) }

// shortDur is a compact duration: 850ms, 12.3s, 4m05s, 2h03m, 3d04h.
func shortDur(d time.Duration) string {
	if d < 0 {
		d = -d
	}
	switch {
	case d < time.Second:
		return fmt.Sprintf("%dms", d.Milliseconds())
	case d < time.Minute && d%time.Second == 0:
		return fmt.Sprintf("%ds", int(d.Seconds()))
	case d < time.Minute:
		return fmt.Sprintf("%.1fs", d.Seconds())
	case d < time.Hour:
		return fmt.Sprintf("%dm%02ds", int(d.Minutes()), int(d.Seconds())%60)
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh%02dm", int(d.Hours()), int(d.Minutes())%60)
	default:
		return fmt.Sprintf("%dd%02dh", int(d.Hours())/24, int(d.Hours())%24)
	}
}

// wholeDur is shortDur without sub-second noise, for ages and waits.
func wholeDur(d time.Duration) string {
	if d < time.Minute {
		return fmt.Sprintf("%ds", int(d.Seconds()))
	}
	return shortDur(d)
}

// sparkline draws counts as block heights, scaled to the largest.
func sparkline(counts []int64) string {
	const levels = "▁▂▃▄▅▆▇█"
	blocks := []rune(levels)
	var peak int64
	for _, c := range counts {
		peak = max(peak, c)
	}
	var b strings.Builder
	for _, c := range counts {
		i := 0
		if peak > 0 && c > 0 {
			i = 1 + int(c*int64(len(blocks)-2)/peak)
		}
		b.WriteRune(blocks[min(i, len(blocks)-1)])
	}
	return b.String()
}

// bar splits w cells (none when w is not positive) into filled and
// empty parts for frac in [0,1].
func bar(frac float64, w int) (filled, empty string) {
	w = max(w, 0)
	frac = min(max(frac, 0), 1)
	n := int(frac*float64(w) + 0.5)
	if frac > 0 && n == 0 {
		n = min(1, w)
	}
	return strings.Repeat("█", n), strings.Repeat("░", w-n)
}

// utcClock formats a database timestamp for tables: time of day in UTC.
func utcClock(t time.Time) string { return t.UTC().Format("15:04:05.000") }

// utcFull formats a database timestamp in full, in UTC.
func utcFull(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05.000 UTC") }

// plural is "1 waiter" / "3 waiters".
func plural(n int64, one, many string) string {
	if n == 1 {
		return fmt.Sprintf("%d %s", n, one)
	}
	return fmt.Sprintf("%d %s", n, many)
}
