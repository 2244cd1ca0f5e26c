package cli

import (
	"context"
	"fmt"
	"time"

	"github.com/lockctl/lockctl/internal/lockdb"
	"github.com/lockctl/lockctl/internal/lockview"
	"github.com/lockctl/lockctl/internal/textsafe"
	"github.com/lockctl/lockctl/locker"
)

// A shared or semaphore key's row is its group's (owner "*", the group's
// own token): what the CLI says of such a key names the holders instead.

// keyState is a key as read after a refusal: its row (nil: not read, or
// none) and, while it is a running shared or semaphore group, its holders
// (group nil otherwise).
type keyState struct {
	row   *lockdb.LockInfo
	group *keyGroup
}

// keyGroup is a running shared or semaphore group: its mode, permits
// (semaphores) and the running leases of its holders.
type keyGroup struct {
	mode    string
	permits int
	holders []lockview.Holder
}

// isGroup says whether row is the row of a running shared or semaphore
// group, whose holders lockview.HoldersOf reads.
func isGroup(row lockdb.LockInfo) bool {
	return row.Mode != "" && row.Mode != locker.ModeExclusive && row.ReleasedAt == nil
}

// readKeyState is keyState of row: with its group's holders read when row
// is a running group's. A failed read of the holders leaves group nil: the
// refusal is then told from the row alone.
func readKeyState(ctx context.Context, db locker.DBTX, row *lockdb.LockInfo) keyState {
	s := keyState{row: row}
	if row == nil || !isGroup(*row) {
		return s
	}
	hs, err := lockview.HoldersOf(ctx, db, []string{row.Key})
	if err == nil {
		s.group = &keyGroup{mode: row.Mode, permits: int(row.Permits), holders: hs[row.Key]}
	}
	return s
}

// heldAs says how a group holds its key: "shared", "as a semaphore of 3
// permits".
func heldAs(mode string, permits int) string {
	if mode == locker.ModeSemaphore {
		return fmt.Sprintf("as a semaphore of %s", plural(permits, "permit", "permits"))
	}
	return "shared"
}

// holdersJSON is hs as JSON: each holder's lease.
func holdersJSON(hs []lockview.Holder) []holderJSON {
	out := make([]holderJSON, 0, len(hs))
	for _, h := range hs {
		out = append(out, holderJSON{Owner: h.Owner, Token: h.Token, ExpiresAt: utc(h.ExpiresAt),
			RemainingMs: h.Remaining.Milliseconds()})
	}
	return out
}

// lastToEnd is how long the longest of hs still runs.
func lastToEnd(hs []lockview.Holder) time.Duration {
	var last time.Duration
	for _, h := range hs {
		last = max(last, h.Remaining)
	}
	return last
}

// groupRefusalLine is refusalLine for a key its group holds: how, by how
// many, then why this request waits: the waiters queued (whom later
// requests do not overtake), every permit taken (until the first ends),
// or the holders (until the last ends).
func groupRefusalLine(prog string, held *locker.Error, g *keyGroup) string {
	line := fmt.Sprintf("%s: %s is held %s by %s", prog, textsafe.Escape(held.Key), heldAs(g.mode, g.permits),
		plural(len(g.holders), "holder", "holders"))
	switch {
	case held.Queued:
		line += "; waiters are queued for it, and a later request does not overtake them"
	case held.Mode == locker.ModeSemaphore && held.Remaining > 0:
		line += fmt.Sprintf("; every permit is taken, the first frees in %s (%s, token %d)",
			formatDuration(held.Remaining), textsafe.Escape(held.Owner), held.Token)
	default:
		line += fmt.Sprintf(" for up to another %s", formatDuration(lastToEnd(g.holders)))
	}
	return line + queueText(held)
}
