package cli

import (
	"context"
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/lockctl/lockctl/internal/lockview"
	"github.com/lockctl/lockctl/internal/textsafe"
	"github.com/lockctl/lockctl/store"
)

// LsOptions are ls's flags.
type LsOptions struct {
	JSON bool
}

// lockRow is one element of `ls --json`.
type lockRow struct {
	Key           string         `json:"key"`
	Owner         string         `json:"owner"` // holder, or last holder when free
	Token         int64          `json:"token"`
	ExpiresAt     time.Time      `json:"expires_at"`
	TTLMs         int64          `json:"ttl_ms"`
	State         store.State    `json:"state"`
	RemainingMs   int64          `json:"remaining_ms"` // negative: expired that long ago
	HeldForMs     int64          `json:"held_for_ms"`  // since the current grant
	AcquiredAt    time.Time      `json:"acquired_at"`
	RenewedAt     *time.Time     `json:"renewed_at"`
	RenewCount    int32          `json:"renew_count"`
	ReleasedAt    *time.Time     `json:"released_at"`
	GrantKind     string         `json:"grant_kind"`
	PreviousOwner *string        `json:"previous_owner"`
	PreviousToken *int64         `json:"previous_token"`
	Metadata      map[string]any `json:"metadata"`
}

func toLockRow(l store.Lock) lockRow {
	return lockRow{
		Key: l.Key, Owner: l.Owner, Token: l.Token, ExpiresAt: utc(l.ExpiresAt),
		TTLMs: l.TTL.Milliseconds(), State: l.State(), RemainingMs: l.Remaining.Milliseconds(),
		HeldForMs: l.HeldFor.Milliseconds(), AcquiredAt: utc(l.AcquiredAt), RenewedAt: utcPtr(l.RenewedAt),
		RenewCount: l.RenewCount, ReleasedAt: utcPtr(l.ReleasedAt), GrantKind: l.GrantKind,
		PreviousOwner: l.PreviousOwner, PreviousToken: l.PreviousToken, Metadata: l.Metadata,
	}
}

// Ls lists every lock, ordered by key: an aligned table, or with --json one
// JSON array. Remaining times come from the database's clock.
func Ls(ctx context.Context, env Env, opts LsOptions) int {
	pool, err := Connect(ctx, env.DSN)
	if err != nil {
		return env.Fail(err)
	}
	defer pool.Close()
	locks, err := lockview.ListAll(ctx, pool)
	if err != nil {
		return env.Fail(err)
	}
	if opts.JSON {
		rows := make([]lockRow, 0, len(locks))
		for _, l := range locks {
			rows = append(rows, toLockRow(l))
		}
		return env.emit(rows)
	}
	if len(locks) == 0 {
		fmt.Fprintln(env.Stdout, "no locks")
		return ExitOK
	}
	tw := tabwriter.NewWriter(env.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "KEY\tOWNER\tTOKEN\tSTATE\tREMAINING\tHELD-FOR")
	for _, l := range locks {
		remaining, heldFor := "-", "-"
		switch l.State() {
		case store.StateHeld, store.StateExpiring:
			remaining, heldFor = formatDuration(l.Remaining), formatDuration(l.HeldFor)
		case store.StateExpired:
			heldFor = formatDuration(l.HeldFor)
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\t%s\n",
			textsafe.Escape(l.Key), textsafe.Escape(l.Owner), l.Token, l.State(), remaining, heldFor)
	}
	if err := tw.Flush(); err != nil {
		return env.Errorf("write output: %v", err)
	}
	return ExitOK
}
