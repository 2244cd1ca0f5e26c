package lockview

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/lockctl/lockctl/store"
)

// SessionState is whether a session still keeps its leases.
type SessionState string

const (
	// SessionLive: heartbeats reach the database; its bound leases run.
	SessionLive SessionState = "live"
	// SessionLapsed: no heartbeat arrived within its TTL, and its leases
	// lapsed with it. Nothing revives it; prune deletes it.
	SessionLapsed SessionState = "lapsed"
)

// Session is one row of distributed_lock_session as an operator sees it
// (lockctl sessions, the console's sessions page).
type Session struct {
	ID        int64
	Owner     string
	Host      string
	PID       int
	Metadata  map[string]any
	TTL       time.Duration
	OpenedAt  time.Time
	RenewedAt *time.Time
	ExpiresAt time.Time
	// Leases counts its bound leases still running.
	Leases int
	// Remaining is what is left until ExpiresAt on the database's clock
	// when it was read; 0 once lapsed.
	Remaining time.Duration
}

// State is live while time remains, lapsed after.
func (s Session) State() SessionState { return s.StateAfter(0) }

// StateAfter is the state elapsed after the read: a screen that counts
// down between reads shows a session lapse when it does.
func (s Session) StateAfter(elapsed time.Duration) SessionState {
	if s.Remaining-elapsed > 0 {
		return SessionLive
	}
	return SessionLapsed
}

// ReadSessions reads every session, live and lapsed (until pruned), oldest
// first, timed by the database's clock.
func ReadSessions(ctx context.Context, db store.DBTX) ([]Session, error) {
	rows, err := store.ListSessions(ctx, db)
	if err != nil {
		return nil, err
	}
	out := make([]Session, 0, len(rows))
	for _, r := range rows {
		s := Session{
			ID: r.ID, Owner: r.Owner, Host: r.Host, PID: r.PID, TTL: r.TTL, OpenedAt: r.OpenedAt,
			RenewedAt: r.RenewedAt, ExpiresAt: r.ExpiresAt, Leases: r.Leases, Remaining: r.Remaining,
		}
		if len(r.Metadata) > 0 {
			if err := json.Unmarshal(r.Metadata, &s.Metadata); err != nil {
				return nil, fmt.Errorf("lockview: session %d's metadata: %w", r.ID, err)
			}
		}
		out = append(out, s)
	}
	return out, nil
}
