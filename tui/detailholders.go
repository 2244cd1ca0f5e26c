package tui

import (
	"fmt"
	"time"

	"charm.land/lipgloss/v2"

	"github.com/lockctl/lockctl/internal/lockdb"
	"github.com/lockctl/lockctl/internal/lockview"
	"github.com/lockctl/lockctl/locker"
)

// The detail page of a shared or semaphore key lists its holders, each
// with its own lease, under a first line that stands for all of them. ↑/↓
// move the selection among those lines: on the first the actions act on
// the key (every holder, by the group's token), on a holder on that
// holder's lease alone (by its token).

// group says the page shows a running group, whose holders it lists.
func (p *detailPage) group() bool {
	return p.detail != nil && p.detail.Lock != nil && runningGroup(p.detail.Lock.Lock)
}

func (p *detailPage) holders() []lockview.Holder {
	if p.detail == nil {
		return nil
	}
	return p.detail.Holders
}

func (p *detailPage) selectedHolders() ([]lockview.Holder, bool) {
	if !p.group() {
		return nil, false
	}
	return p.holders(), p.holdersKnown
}

func (p *detailPage) selectedHolder() (lockview.Holder, bool) {
	hs := p.holders()
	if !p.group() || p.holderCursor < 1 || p.holderCursor > len(hs) {
		return lockview.Holder{}, false
	}
	return hs[p.holderCursor-1], true
}

// moveHolder moves the selection by delta lines: 0 is every holder, i the
// i-th holder.
func (p *detailPage) moveHolder(delta int) {
	p.selectHolderLine(p.holderCursor + delta)
	p.render()
	p.showHolderLine()
}

// selectHolderLine selects line i, kept within the lines, and remembers
// the holder by its token.
func (p *detailPage) selectHolderLine(i int) {
	hs := p.holders()
	p.holderCursor = min(max(i, 0), len(hs))
	p.holderToken = 0
	if p.holderCursor > 0 {
		p.holderToken = hs[p.holderCursor-1].Token
	}
}

// followHolder keeps the selection on the selected holder after a poll;
// when its lease has ended, on the line now where it was. The action it
// is then offered names the holder it acts on.
func (p *detailPage) followHolder() {
	if p.holderToken == 0 {
		return
	}
	for i, h := range p.holders() {
		if h.Token == p.holderToken {
			p.holderCursor = i + 1
			return
		}
	}
	p.selectHolderLine(p.holderCursor)
}

// showHolderLine scrolls the pane so the selected line is on screen.
func (p *detailPage) showHolderLine() {
	if p.holdersAt < 0 {
		return
	}
	line, top, h := p.holdersAt+p.holderCursor, p.view.YOffset(), p.view.Height()
	switch {
	case line < top:
		p.view.SetYOffset(line)
	case line >= top+h:
		p.view.SetYOffset(line - h + 1)
	}
}

// holderLines is the holders section of a running group's page; first is
// the index its selectable lines start at among the page's lines, kept
// in p.holdersAt for showHolderLine.
func (p *detailPage) holderLines(r liveRow, first int) []string {
	s := p.c.styles
	hs := p.holders()
	held := liveHolders(hs, p.c.advance) // a lease that ran out since the poll stays listed, in red
	title := fmt.Sprintf("Holders (%d, in slot order)", held)
	if r.Mode == locker.ModeSemaphore {
		title = fmt.Sprintf("Holders (%d of %d permits, in slot order)", held, r.Permits)
	}
	lines := []string{"", s.App.Render(title) + s.Muted.Render(" · ↑/↓ select one")}
	p.holdersAt = first + len(lines)
	all := fmt.Sprintf("every holder · group token %s", token(r.Token))
	if p.c.keys.Expire.Enabled() || p.c.keys.Release.Enabled() {
		all += " · the actions here act on all of them"
	}
	lines = append(lines, p.selectable(0, all, lipgloss.NewStyle()))
	switch {
	case !p.holdersKnown:
		lines = append(lines, "    "+s.Muted.Render("reading the holders…"))
	case len(hs) == 0:
		lines = append(lines, "    "+s.Muted.Render("no holder's lease runs: they ran out; the next acquirer ends the group"))
	}
	slotW, ownerW, tokW := 0, 0, 0
	for _, h := range hs {
		slotW = max(slotW, width(fmt.Sprint(h.Slot)))
		ownerW = max(ownerW, width(safe(h.Owner)))
		tokW = max(tokW, width(token(h.Token)))
	}
	ownerW = min(ownerW, maxOwnerWidth)
	for i, h := range hs {
		sel := p.holderCursor == i+1
		left := holderLeft(h, p.c.advance)
		st := lockdb.StateHeld
		if left <= 0 {
			st = lockdb.StateExpired
		}
		full, empty := bar(float64(left)/float64(max(h.TTL, 1)), 8)
		heldFor := h.ExpiresAt.Sub(h.AcquiredAt) - h.Remaining + p.c.advance
		parts := []struct {
			text  string
			style lipgloss.Style
		}{
			{fmt.Sprintf("slot %*d  ", slotW, h.Slot), s.Label},
			{fit(safe(h.Owner), ownerW) + "  ", lipgloss.NewStyle()},
			{fitRight(token(h.Token), tokW) + "  ", lipgloss.NewStyle()},
			{full, s.stateStyle(st)},
			{empty, s.BarEmpty},
			{" " + fitRight(holderTTL(left), 7), s.stateStyle(st)},
			{" of " + shortDur(h.TTL) + "  held " + shortDur(heldFor), s.Muted},
		}
		line := ""
		for _, part := range parts {
			style := part.style
			if sel {
				style = style.Inherit(s.Selected)
			}
			line += style.Render(part.text)
		}
		lines = append(lines, p.marker(sel)+line)
	}
	return lines
}

// holderTTL is a holder's time left, negative once it ran out.
func holderTTL(left time.Duration) string {
	if left <= 0 {
		return "-" + shortDur(-left)
	}
	return shortDur(left)
}

// selectable is selectable line i with text in style.
func (p *detailPage) selectable(i int, text string, style lipgloss.Style) string {
	sel := p.holderCursor == i
	if sel {
		style = style.Inherit(p.c.styles.Selected)
	}
	return p.marker(sel) + style.Render(text)
}

// marker is the cursor's place before a selectable line.
func (p *detailPage) marker(selected bool) string {
	if selected {
		return p.c.styles.Selected.Render("▶ ")
	}
	return "  "
}
