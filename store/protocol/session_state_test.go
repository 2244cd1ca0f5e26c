package protocol_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// sessionRow is a distributed_lock_session row a case prepares, and the
// grants bound to it. Durations are offsets from the database's clock.
type sessionRow struct {
	owner     string
	expiresIn time.Duration // expires_at − now; ≤ 0: the session lapsed
	ttl       time.Duration
	host      string
	pid       int
	bound     []binding
	role      string // owner_role, the role that opened it; "": the caller's
}

// binding names one grant of the case's keys: the case's key (name "") or
// another key of its set (an also's name), and which of the key's grants.
type binding struct {
	name  string
	token tok // keptToken: the key's current grant; keptPrevious: the one before
}

// theGrant is the case's key's current grant; olderGrant the grant of the
// case's key before it (the key was granted anew since); grantOf another
// key's current grant.
var (
	theGrant   = binding{token: keptToken}
	olderGrant = binding{token: keptPrevious}
)

func grantOf(name string) binding { return binding{name: name, token: keptToken} }

// The sessions' TTL, and what a live one has left of it: a heartbeat
// moves its end (and its leases') from 40 s away to two minutes.
const (
	sessionTTL  = 2 * time.Minute
	sessionLeft = 40 * time.Second
)

// liveSession is my session on web-3 as pid 4242, with 40 s left of its
// TTL, the grants bound to it; lapsedSession one that ran out a second ago.
func liveSession(bound ...binding) sessionRow {
	return sessionRow{owner: me, expiresIn: sessionLeft, ttl: sessionTTL, host: "web-3", pid: 4242, bound: bound}
}

func lapsedSession(bound ...binding) sessionRow {
	s := liveSession(bound...)
	s.expiresIn = -time.Second
	return s
}

// of is the session opened by owner instead.
func (r sessionRow) of(owner string) sessionRow {
	r.owner = owner
	return r
}

// inSession adds a session to the state; the first added is the case's
// own, the one its call names.
func (s state) inSession(r sessionRow) state {
	s.sessions = append(s.sessions, r)
	return s
}

// ref is the key and token a binding names, as prepared.
func (p prepared) ref(b binding) (string, int64) {
	q, key := p, p.key
	if b.name != "" {
		q, key = p.set.prepared[b.name], p.set.keys[b.name]
	}
	return key, tokenArg(q, b.token)
}

// A prepared session was opened an hour ago with metadata {"app":
// "billing"}, and never renewed.
const (
	insertSessionSQL = `
INSERT INTO distributed_lock_session (owner_id, host, pid, metadata, ttl, opened_at, expires_at, owner_role)
SELECT $1, $2, $3, '{"app": "billing"}', $4 * interval '1 microsecond', c.now - interval '1 hour',
       c.now + $5 * interval '1 microsecond', coalesce(nullif($6, ''), session_user)
FROM (SELECT clock_timestamp() AS now) c
RETURNING session_id`
	insertBindingSQL = `INSERT INTO distributed_lock_session_lease (lock_key, fence_token, session_id) VALUES ($1, $2, $3)`
)

// prepareSessions writes the sessions and their bindings, once the keys
// they bind are prepared, and returns their ids in order.
func prepareSessions(t *testing.T, db *pgxpool.Pool, sessions []sessionRow, p prepared) []int64 {
	t.Helper()
	ctx := context.Background()
	var ids []int64
	for _, s := range sessions {
		var id int64
		err := db.QueryRow(ctx, insertSessionSQL, s.owner, s.host, s.pid, s.ttl.Microseconds(), s.expiresIn.Microseconds(), s.role).Scan(&id)
		if err != nil {
			t.Fatalf("prepare %s's session: %v", s.owner, err)
		}
		for _, b := range s.bound {
			key, token := p.ref(b)
			if _, err := db.Exec(ctx, insertBindingSQL, key, token, id); err != nil {
				t.Fatalf("bind %s/%d to session %d: %v", key, token, id, err)
			}
		}
		ids = append(ids, id)
	}
	return ids
}

// sessionState is a session's row as read after a call, with its bindings.
// The *In and *Ago fields are its times relative to the database's clock at
// the read.
type sessionState struct {
	ID        int64          `db:"session_id"`
	Owner     string         `db:"owner_id"`
	Host      string         `db:"host"`
	PID       int32          `db:"pid"`
	Metadata  map[string]any `db:"metadata"`
	TTL       time.Duration  `db:"ttl"`
	OpenedAt  time.Time      `db:"opened_at"`
	RenewedAt *time.Time     `db:"renewed_at"`
	ExpiresAt time.Time      `db:"expires_at"`

	ExpiresIn  time.Duration  `db:"expires_in"`
	OpenedAgo  time.Duration  `db:"opened_ago"`
	RenewedAgo *time.Duration `db:"renewed_ago"`

	Bound []boundRef `db:"-"` // in key order
}

// boundRef is one binding as stored.
type boundRef struct {
	Key   string `db:"lock_key" json:"key"`
	Token int64  `db:"fence_token" json:"token"`
}

func (s sessionState) String() string {
	return fmt.Sprintf("{id %d, owner %s, host %s, pid %d, metadata %v, ttl %v, opened %v, renewed %s, expires %v (in %v), bound %v}",
		s.ID, s.Owner, s.Host, s.PID, s.Metadata, s.TTL, s.OpenedAt, show(s.RenewedAt), s.ExpiresAt, s.ExpiresIn, s.Bound)
}

// stored is the session without its clock-relative fields.
func (s sessionState) stored() sessionState {
	s.ExpiresIn, s.OpenedAgo, s.RenewedAgo = 0, 0, nil
	return s
}

const (
	readSessionSQL = `
SELECT s.session_id, s.owner_id, s.host, s.pid, s.metadata, s.ttl, s.opened_at, s.renewed_at, s.expires_at,
       s.expires_at - c.ts AS expires_in, c.ts - s.opened_at AS opened_ago, c.ts - s.renewed_at AS renewed_ago
FROM distributed_lock_session s, (SELECT clock_timestamp() AS ts) c
WHERE s.session_id = $1`
	readBindingsSQL = `
SELECT b.lock_key, b.fence_token FROM distributed_lock_session_lease b
WHERE b.session_id = $1 ORDER BY b.lock_key, b.fence_token`
)

// readSession reads session id and its bindings; nil when there is no such
// session (and then it must have no bindings left either).
func readSession(t *testing.T, db *pgxpool.Pool, id int64) *sessionState {
	t.Helper()
	ctx := context.Background()
	rows, _ := db.Query(ctx, readBindingsSQL, id)
	bound, err := pgx.CollectRows(rows, pgx.RowToStructByName[boundRef])
	if err != nil {
		t.Fatalf("read the bindings of session %d: %v", id, err)
	}
	rows, _ = db.Query(ctx, readSessionSQL, id)
	s, err := pgx.CollectExactlyOneRow(rows, pgx.RowToStructByName[sessionState])
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		if len(bound) > 0 {
			t.Errorf("session %d is gone, its bindings %v are not", id, bound)
		}
		return nil
	case err != nil:
		t.Fatalf("read session %d: %v", id, err)
	}
	s.Bound = bound
	return &s
}

func observeSessions(t *testing.T, db *pgxpool.Pool, ids []int64) []*sessionState {
	t.Helper()
	var out []*sessionState
	for _, id := range ids {
		out = append(out, readSession(t, db, id))
	}
	return out
}
