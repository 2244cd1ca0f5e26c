package history

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/lockctl/lockctl/internal/lockdb"
	"github.com/lockctl/lockctl/store"
)

// SessionKill is an Op that records a process killed while it kept leases
// with a locker.Session (SIGKILL, or a test's equivalent: nothing more of
// it reaches the database but what was already in flight). Op.Session
// names the session, Op.Owner its owner, Call and Return span the kill.
const SessionKill Kind = "session_kill"

// ObservedSession is a session as the database kept it after a run: its
// last expires_at and the leases still bound to it (key and token).
type ObservedSession struct {
	ExpiresAt time.Time
	Leases    []BoundLease
}

// BoundLease is one binding of a lease to a session.
type BoundLease struct {
	Key   string
	Token int64
}

// sessionsSQL reads every session with its bindings. A killed session is
// neither closed nor ended, so its row and bindings stay (no prune runs
// during a check).
const sessionsSQL = `
SELECT s.session_id, s.expires_at, b.lock_key, b.fence_token
FROM distributed_lock_session s LEFT JOIN distributed_lock_session_lease b USING (session_id)
ORDER BY s.session_id, b.lock_key`

// observeSessions reads the sessions table into obs.Sessions.
func observeSessions(ctx context.Context, db store.DBTX, obs *Observed) error {
	rows, err := db.Query(ctx, sessionsSQL)
	if err != nil {
		return fmt.Errorf("history: read the sessions: %w", err)
	}
	obs.Sessions = map[int64]*ObservedSession{}
	var (
		id    int64
		at    time.Time
		key   *string
		token *int64
	)
	_, err = pgx.ForEachRow(rows, []any{&id, &at, &key, &token}, func() error {
		s := obs.Sessions[id]
		if s == nil {
			s = &ObservedSession{ExpiresAt: at}
			obs.Sessions[id] = s
		}
		if key != nil && token != nil {
			s.Leases = append(s.Leases, BoundLease{*key, *token})
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("history: read the sessions: %w", err)
	}
	return nil
}

// checkKilledSessions verifies property 8: the leases a killed session
// kept were taken over by no grant before the session's last expires_at
// (plus the lock-delay their grant asked for): nothing of the process
// renewed or released them after the kill, so they lapsed with the
// session, at the expiry the database last gave it, and the grant that
// took each over (checker.tookOver: for a shared lease the next exclusive
// grant, not the next reader beside it) is a steal no earlier than that. A binding is how the database says the session
// kept a lease; a lease the process took but had not bound yet ends at its
// own expiry, which property 2 checks.
func (c *checker) checkKilledSessions() {
	for _, op := range c.ops {
		if op.Kind != SessionKill {
			continue
		}
		c.stats.KilledSessions++
		s := c.obs.Sessions[op.Session]
		if s == nil {
			c.fail("session %d of %q was killed, but the database has no such session: closed or ended after its process died",
				op.Session, op.Owner)
			continue
		}
		for _, b := range s.Leases {
			id := leaseID{b.Key, b.Token}
			c.stats.KilledSessionLeases++
			g, ok := c.tookOver[id]
			if !ok {
				continue // nobody took the key after it, or its grant is not in the log
			}
			until := s.ExpiresAt
			if f := c.leases[id]; f != nil && f.delayKnown && !c.delayCut[leaseID{g.Key, *g.Token}] {
				until = until.Add(f.delay)
			}
			if g.Kind == lockdb.EventStolen {
				c.stats.KilledLeasesStolen++
			}
			if g.OccurredAt.Before(until) {
				c.fail("killed session %d of %q kept %q (token %d) until %s, but event %d granted it (%s) to %q with token %d at %s (%s before)",
					op.Session, op.Owner, b.Key, b.Token, until.Format(time.RFC3339Nano), g.ID, g.Kind, deref(g.Owner), *g.Token,
					g.OccurredAt.Format(time.RFC3339Nano), until.Sub(g.OccurredAt))
			}
		}
	}
}
