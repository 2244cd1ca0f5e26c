package tui

// waitRef names a line of the blocking page across refreshes: the wait it
// shows and which of that wait's lines it is (a wait can be drawn in more
// than one chain).
type waitRef struct {
	waiter, key string
	nth         int
}

// waitLine is a line the cursor can stand on, and where it is in the
// page's content.
type waitLine struct {
	ref  waitRef
	line int
}

// waitLines lists the lines of tree (drawn from content line first on)
// that name a wait.
func waitLines(tree []treeLine, first int) []waitLine {
	var out []waitLine
	seen := map[[2]string]int{}
	for i, l := range tree {
		if l.wait == nil {
			continue
		}
		id := [2]string{l.wait.Waiter, l.wait.Key}
		out = append(out, waitLine{ref: waitRef{waiter: id[0], key: id[1], nth: seen[id]}, line: first + i})
		seen[id]++
	}
	return out
}

// follow puts the cursor back on the selected wait after the lines were
// drawn anew (a poll, a resize); if the wait is gone, on the wait line
// nearest to where it was.
func (p *blockingPage) follow() {
	if len(p.waits) == 0 {
		p.cursor = -1
		return
	}
	i := -1
	if p.selLine >= 0 {
		for j, w := range p.waits {
			if w.ref == p.sel {
				i = j
				break
			}
		}
		if i < 0 { // drawn fewer times now: its first line
			for j, w := range p.waits {
				if w.ref.waiter == p.sel.waiter && w.ref.key == p.sel.key {
					i = j
					break
				}
			}
		}
		if i < 0 {
			i = p.nearest(p.selLine)
		}
	}
	p.selectWait(max(i, 0))
}

// nearest is the wait line closest to content line n, the upper on a tie.
func (p *blockingPage) nearest(n int) int {
	best := 0
	for j, w := range p.waits {
		if abs(w.line-n) < abs(p.waits[best].line-n) {
			best = j
		}
	}
	return best
}

func abs(n int) int { return max(n, -n) }

// selectWait puts the cursor on wait line i.
func (p *blockingPage) selectWait(i int) {
	p.cursor = i
	p.sel, p.selLine = p.waits[i].ref, p.waits[i].line
}

// move shifts the cursor by delta wait lines.
func (p *blockingPage) move(delta int) {
	if p.cursor < 0 {
		return
	}
	p.selectWait(min(max(p.cursor+delta, 0), len(p.waits)-1))
}

// turnPage moves the cursor about a screen up (dir -1) or down (1): to the
// wait line nearest a screen's height away, and at least one line on.
func (p *blockingPage) turnPage(dir int) {
	if p.cursor < 0 {
		return
	}
	i := p.nearest(p.selLine + dir*p.view.Height())
	if (i-p.cursor)*dir <= 0 {
		i = p.cursor + dir
	}
	p.selectWait(min(max(i, 0), len(p.waits)-1))
}

// ensureVisible scrolls so the cursor's line is on screen, with as many
// as fit of the lines between it and the wait line above: the holder or
// ring its chain starts with, the title above the first wait.
func (p *blockingPage) ensureVisible() {
	if p.cursor < 0 {
		return
	}
	line, h, y := p.selLine, max(1, p.view.Height()), p.view.YOffset()
	from := 0
	if p.cursor > 0 {
		from = p.waits[p.cursor-1].line + 1
	}
	if y > from {
		y = max(from, line-h+1)
	}
	if line >= y+h {
		y = line - h + 1
	}
	p.view.SetYOffset(y)
}
