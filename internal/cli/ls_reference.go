package cli

import (
	"strconv"
	"time"

	"github.com/lockctl/lockctl/internal/lockdb"
	"github.com/lockctl/lockctl/internal/lockview"
	"github.com/lockctl/lockctl/internal/textsafe"
)

// referenceNote is said on stderr whenever ls shows the reference service's
// table, so that stdout stays the listing.
const referenceNote = "distributed_lock is the reference service's table, not migrated: shown read-only; " +
	"`lockctl migrate` adopts it (see docs/operations.md, switch-over)"

// referenceLockRow is one element of `ls --json` on the reference service's
// table: its four columns, with the state and time left on the database's
// clock. It records nothing else.
type referenceLockRow struct {
	Key         string       `json:"key"`
	Owner       string       `json:"owner"`
	Token       int64        `json:"token"`
	ExpiresAt   time.Time    `json:"expires_at"`
	State       lockdb.State `json:"state"`
	RemainingMs int64        `json:"remaining_ms"` // negative: expired that long ago
}

// writeReferenceLocks prints the reference service's table as ls does, with
// referenceNote on stderr.
func writeReferenceLocks(env Env, locks []lockview.Lock, opts LsOptions) int {
	env.printLine(env.Prog + ": " + referenceNote)
	if opts.JSON || opts.CSV {
		rows := make([]referenceLockRow, 0, len(locks))
		for _, l := range locks {
			rows = append(rows, referenceLockRow{Key: l.Key, Owner: l.Owner, Token: l.Token, ExpiresAt: utc(l.ExpiresAt),
				State: l.State(), RemainingMs: l.Remaining.Milliseconds()})
		}
		if opts.CSV {
			return emitCSV(env, rows)
		}
		return env.emit(rows)
	}
	rows := make([][]string, 0, len(locks))
	for _, l := range locks {
		remaining := "-"
		if l.State() != lockdb.StateExpired {
			remaining = formatDuration(l.Remaining)
		}
		rows = append(rows, []string{textsafe.Escape(l.Key), textsafe.Escape(l.Owner),
			strconv.FormatInt(l.Token, 10), string(l.State()), remaining})
	}
	if err := writeTable(env.Stdout, "no locks", []string{"KEY", "OWNER", "TOKEN", "STATE", "REMAINING"}, rows); err != nil {
		return env.Errorf("write output: %v", err)
	}
	return ExitOK
}
