package cli

import (
	"context"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"github.com/lockctl/lockctl/internal/lockview"
	"github.com/lockctl/lockctl/internal/textsafe"
)

// SessionsCommand is `lockctl sessions`.
func SessionsCommand() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:        "sessions",
		Short:      "list the sessions (one heartbeat keeping a process's leases): owner, host, pid, leases held, time left, live or lapsed",
		SuggestFor: []string{"session", "processes", "heartbeats"},
		RunE:       RunE(func(ctx context.Context, env Env, _ []string) int { return Sessions(ctx, env, asJSON) }),
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print one JSON array")
	return ReadOnlyOK(cmd)
}

// sessionRow is one element of `sessions --json`.
type sessionRow struct {
	ID          int64          `json:"id"`
	Owner       string         `json:"owner"`
	Host        string         `json:"host"`
	PID         int            `json:"pid"`
	Leases      int            `json:"leases"` // bound leases still running
	State       string         `json:"state"`  // live, lapsed
	RemainingMs int64          `json:"remaining_ms"`
	ExpiresAt   time.Time      `json:"expires_at"`
	TTLMs       int64          `json:"ttl_ms"`
	OpenedAt    time.Time      `json:"opened_at"`
	RenewedAt   *time.Time     `json:"renewed_at"`
	Metadata    map[string]any `json:"metadata"`
}

func toSessionRow(s lockview.Session) sessionRow {
	return sessionRow{
		ID: s.ID, Owner: s.Owner, Host: s.Host, PID: s.PID, Leases: s.Leases, State: string(s.State()),
		RemainingMs: s.Remaining.Milliseconds(), ExpiresAt: utc(s.ExpiresAt), TTLMs: s.TTL.Milliseconds(),
		OpenedAt: utc(s.OpenedAt), RenewedAt: utcPtr(s.RenewedAt), Metadata: s.Metadata,
	}
}

// Sessions prints every session (lockview.ReadSessions), oldest first: a
// table, or with asJSON one JSON array. A lapsed session is listed until
// prune deletes it, with what it held gone.
func Sessions(ctx context.Context, env Env, asJSON bool) int {
	pool, err := Connect(ctx, env.DSN)
	if err != nil {
		return env.Fail(err)
	}
	defer pool.Close()
	sessions, err := lockview.ReadSessions(ctx, pool)
	if err != nil {
		return env.Fail(err)
	}
	if asJSON {
		rows := make([]sessionRow, 0, len(sessions))
		for _, s := range sessions {
			rows = append(rows, toSessionRow(s))
		}
		return env.emit(rows)
	}
	rows := make([][]string, 0, len(sessions))
	for _, s := range sessions {
		remaining := "-"
		if s.State() == lockview.SessionLive {
			remaining = formatDuration(s.Remaining)
		}
		rows = append(rows, []string{strconv.FormatInt(s.ID, 10), textsafe.Escape(s.Owner), textsafe.Escape(orDash(&s.Host)),
			strconv.Itoa(s.PID), strconv.Itoa(s.Leases), string(s.State()), remaining})
	}
	header := []string{"ID", "OWNER", "HOST", "PID", "LEASES", "STATE", "REMAINING"}
	if err := writeTable(env.Stdout, "no sessions", header, rows); err != nil {
		return env.Errorf("write output: %v", err)
	}
	return ExitOK
}
