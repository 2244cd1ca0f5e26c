package store

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// SessionRef names one session: its id and the owner that opened it. Every
// call on a session matches both.
type SessionRef struct {
	ID    int64
	Owner string
}

// SessionParams is what a session is opened with (distributed_lock_open_session).
type SessionParams struct {
	Owner    string
	TTL      time.Duration
	Host     string
	PID      int
	Metadata []byte // a JSON object, or nil
}

// SessionRow is a session's id and how long it runs.
type SessionRow struct {
	ID        int64
	ExpiresAt time.Time
	TTL       time.Duration
}

const openSessionSQL = `
SELECT s.session_id, s.expires_at, s.ttl
FROM distributed_lock_open_session($1, $2::bigint, $3, $4::integer, $5::jsonb) s`

// OpenSession opens a session that lasts p.TTL unless a heartbeat extends it.
func OpenSession(ctx context.Context, db DBTX, p SessionParams) (SessionRow, error) {
	var row SessionRow
	err := db.QueryRow(ctx, openSessionSQL, p.Owner, p.TTL.Microseconds(), p.Host, p.PID, jsonArg(p.Metadata)).
		Scan(&row.ID, &row.ExpiresAt, &row.TTL)
	return row, Interpret(err)
}

// SessionBeat is what a session heartbeat returned.
type SessionBeat struct {
	Outcome string // lockdb.OutcomeRenewed, OutcomeExpired or OutcomeGone
	Session SessionRow
	Leases  int // bound leases it kept
	// Lost are the leases of keep this heartbeat did not keep: ended, or
	// no longer bound to the session.
	Lost []BoundRef
	// Revokes are operators' revokes of the leases bound to the session.
	Revokes map[BoundRef]*Revoke
}

// BoundRef names a lease bound to a session: key and token.
type BoundRef struct {
	Key   string `json:"key"`
	Token int64  `json:"token"`
}

const sessionHeartbeatSQL = `
SELECT h.outcome, h.expires_at, h.ttl, h.leases, h.lost,
       (SELECT json_agg(r) FROM distributed_lock_session_revokes($1::bigint, $2) r) AS revokes
FROM distributed_lock_session_heartbeat($1::bigint, $2, $3::text[], $4::bigint[], $5::text[], $6::bigint[]) h`

// SessionHeartbeat renews s and every lease bound to it, after dropping the
// bindings in drop (leases the caller no longer keeps), and says which of
// keep (the leases the caller counts on s to keep) it did not keep.
func SessionHeartbeat(ctx context.Context, db DBTX, s SessionRef, drop, keep []BoundRef) (SessionBeat, error) {
	dropKeys, dropTokens := splitBound(drop)
	keepKeys, keepTokens := splitBound(keep)
	var (
		h         SessionBeat
		expiresAt *time.Time
		ttl       *time.Duration
		lost      []byte
		revokes   []byte
	)
	err := db.QueryRow(ctx, sessionHeartbeatSQL, s.ID, s.Owner, dropKeys, dropTokens, keepKeys, keepTokens).
		Scan(&h.Outcome, &expiresAt, &ttl, &h.Leases, &lost, &revokes)
	if err != nil {
		return SessionBeat{}, Interpret(err)
	}
	h.Session = sessionRow(s.ID, expiresAt, ttl)
	if err := json.Unmarshal(lost, &h.Lost); err != nil {
		return SessionBeat{}, fmt.Errorf("store: heartbeat's lost leases: %w", err)
	}
	if h.Revokes, err = boundRevokes(revokes); err != nil {
		return SessionBeat{}, fmt.Errorf("store: heartbeat's revokes: %w", err)
	}
	return h, nil
}

// Bound is what binding leases to a session returned.
type Bound struct {
	Outcome string // lockdb.OutcomeBound, OutcomeNotHeld, OutcomeExpired or OutcomeGone
	Session SessionRow
	NotHeld string // OutcomeNotHeld: the first key not held
}

const bindSQL = `
SELECT b.outcome, b.expires_at, b.ttl, b.not_held
FROM distributed_lock_session_bind($1::bigint, $2, $3, $4::text[], $5::bigint[]) b`

// BindSession binds owner's leases (refs, all of one owner) to session s,
// all or none: they end when s does.
func BindSession(ctx context.Context, db DBTX, s SessionRef, refs []LeaseRef) (Bound, error) {
	keys, owner, tokens := splitRefs(refs)
	var (
		b         Bound
		expiresAt *time.Time
		ttl       *time.Duration
		notHeld   *string
	)
	err := db.QueryRow(ctx, bindSQL, s.ID, s.Owner, owner, keys, tokens).Scan(&b.Outcome, &expiresAt, &ttl, &notHeld)
	if err != nil {
		return Bound{}, Interpret(err)
	}
	b.Session = sessionRow(s.ID, expiresAt, ttl)
	if notHeld != nil {
		b.NotHeld = *notHeld
	}
	return b, nil
}

const closeSessionSQL = `SELECT c.outcome, c.released FROM distributed_lock_close_session($1::bigint, $2, $3, $4) c`

// CloseSession releases every lease still bound to s and deletes s; with
// log each release is logged as a "released" event under actor (empty: the
// owner), as Release logs. outcome is lockdb.OutcomeClosed, or OutcomeGone
// when s did not exist.
func CloseSession(ctx context.Context, db DBTX, s SessionRef, log bool, actor string) (outcome string, released int, err error) {
	err = db.QueryRow(ctx, closeSessionSQL, s.ID, s.Owner, log, nullIfEmpty(actor)).Scan(&outcome, &released)
	return outcome, released, Interpret(err)
}

const endSessionSQL = `SELECT e.outcome, e.expired FROM distributed_lock_end_session($1::bigint, $2, $3) e`

// EndSession is the operator's end of session id: its running leases are
// force-expired and it is deleted, recorded under actor. outcome is
// lockdb.OutcomeEnded, or OutcomeGone when there was no such session.
func EndSession(ctx context.Context, db DBTX, id int64, actor, reason string) (outcome string, expired int, err error) {
	err = db.QueryRow(ctx, endSessionSQL, id, nullIfEmpty(actor), nullIfEmpty(reason)).Scan(&outcome, &expired)
	return outcome, expired, Interpret(err)
}

// splitBound is refs as the key and token arrays a statement takes.
func splitBound(refs []BoundRef) (keys []string, tokens []int64) {
	keys, tokens = make([]string, len(refs)), make([]int64, len(refs))
	for i, r := range refs {
		keys[i], tokens[i] = r.Key, r.Token
	}
	return keys, tokens
}

// SessionInfo is one session as lockctl sessions lists it.
type SessionInfo struct {
	ID        int64
	Owner     string
	Host      string
	PID       int
	Metadata  []byte
	TTL       time.Duration
	OpenedAt  time.Time
	RenewedAt *time.Time
	ExpiresAt time.Time
	Leases    int           // bound leases still running
	Remaining time.Duration // until expires_at, by the database's clock; 0 once lapsed
}

// listSessionsSQL reads every session, oldest first, with how many of its
// bindings are running leases (distributed_lock_live, the one liveness
// rule), timed by the database's clock.
const listSessionsSQL = `
SELECT s.session_id, s.owner_id, s.host, s.pid, s.metadata, s.ttl, s.opened_at, s.renewed_at, s.expires_at,
       (SELECT count(*) FROM distributed_lock_session_lease b
        JOIN distributed_lock l ON l.lock_key = b.lock_key AND l.fence_token = b.fence_token
        WHERE b.session_id = s.session_id AND distributed_lock_live(l, c.now))::int,
       greatest(s.expires_at - c.now, interval '0')
FROM distributed_lock_session s, (SELECT distributed_lock_now() AS now) c
ORDER BY s.session_id`

// ListSessions reads every session (live and lapsed, until pruned).
func ListSessions(ctx context.Context, db DBTX) ([]SessionInfo, error) {
	rows, err := db.Query(ctx, listSessionsSQL)
	if err != nil {
		return nil, Interpret(err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (SessionInfo, error) {
		var s SessionInfo
		err := r.Scan(&s.ID, &s.Owner, &s.Host, &s.PID, &s.Metadata, &s.TTL, &s.OpenedAt, &s.RenewedAt,
			&s.ExpiresAt, &s.Leases, &s.Remaining)
		return s, err
	})
	return out, Interpret(err)
}

// sessionRow is session id as a heartbeat or binding returned it: its
// expiry and TTL, NULL (zero) when the call did not renew it.
func sessionRow(id int64, expiresAt *time.Time, ttl *time.Duration) SessionRow {
	row := SessionRow{ID: id}
	if expiresAt != nil && ttl != nil {
		row.ExpiresAt, row.TTL = *expiresAt, *ttl
	}
	return row
}
