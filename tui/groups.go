package tui

import (
	"fmt"
	"time"

	"github.com/lockctl/lockctl/internal/lockdb"
	"github.com/lockctl/lockctl/internal/lockview"
	"github.com/lockctl/lockctl/locker"
)

// A shared or semaphore key's lock row is its holders' group
// (store/sql/functions/11_shared.sql): its owner is "*", its token the
// group's own, its expiry the last of its holders'. The console names the
// holders where an owner would stand, and the detail page lists them.

// grouped says l is a shared or semaphore key's row, its group running or
// ended (an ended group's row keeps its mode until an exclusive grant).
func grouped(l lockdb.LockInfo) bool {
	return l.Mode == locker.ModeShared || l.Mode == locker.ModeSemaphore
}

// runningGroup says l's group has not ended: it has holders to read
// (lockview.GroupKeys is the rule).
func runningGroup(l lockview.Lock) bool {
	return len(lockview.GroupKeys([]lockview.Lock{l})) > 0
}

// holderLeft is what is left of h's lease, counted down by advance from
// its poll as the rows are.
func holderLeft(h lockview.Holder, advance time.Duration) time.Duration {
	return h.Remaining - advance
}

// liveHolders counts the holders of hs whose lease has not run out by
// advance.
func liveHolders(hs []lockview.Holder, advance time.Duration) int {
	n := 0
	for _, h := range hs {
		if holderLeft(h, advance) > 0 {
			n++
		}
	}
	return n
}

// groupOwner is what stands for a group's row in place of its owner, in
// forms from the longest, the mode kept longest: "shared · 3 holders",
// "shared · 3", "3" and "semaphore · 2/3 permits", "semaphore · 2/3",
// "sem · 2/3", "2/3". held counts the holders; known is false when they
// were not read (the count is then "?"). An ended group names its mode:
// "last: shared", "last: semaphore, 3 permits".
func groupOwner(l lockdb.LockInfo, held int, known bool) []string {
	n := "?"
	if known {
		n = fmt.Sprint(held)
	}
	ended := l.ReleasedAt != nil
	switch {
	case l.Mode == locker.ModeSemaphore && ended:
		return []string{fmt.Sprintf("last: semaphore, %d permits", l.Permits), "last: semaphore"}
	case l.Mode == locker.ModeSemaphore:
		used := fmt.Sprintf("%s/%d", n, l.Permits)
		return []string{"semaphore · " + used + " permits", "semaphore · " + used, "sem · " + used, used}
	case ended:
		return []string{"last: shared"}
	}
	holders := n + " holders"
	if known && held == 1 {
		holders = "1 holder"
	}
	return []string{"shared · " + holders, "shared · " + n, n}
}

// widest is the first of forms (the longest first) that fits w cells, else
// the last.
func widest(forms []string, w int) string {
	for _, f := range forms {
		if width(f) <= w {
			return f
		}
	}
	return forms[len(forms)-1]
}

// modeText says what a grouped key's mode means, for the detail page.
func modeText(l lockdb.LockInfo) string {
	if l.Mode == locker.ModeSemaphore {
		return fmt.Sprintf("semaphore: at most %d holders (its permits), each with its own lease", l.Permits)
	}
	return "shared: any number of holders, each with its own lease"
}
