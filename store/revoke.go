package store

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/lockctl/lockctl/internal/lockdb"
)

// Revoke is an operator's pending request that a grant's holder let go
// (distributed_lock_renew and distributed_lock_revoke_pending), as the
// holder reads it.
type Revoke struct {
	RequestedAt time.Time
	Reason      string
	Actor       string // who the operator says it is (a claim)
	CallerRole  string // the database role that revoked
	ForceAt     *time.Time
	// Remaining is how long the lease had until ForceAt when read
	// (database clock); 0 with no ForceAt.
	Remaining time.Duration
}

// RevokeParams is an operator's revoke of the grant it saw.
type RevokeParams struct {
	Key        string
	Token      int64
	ForceAfter *time.Duration // nil: no deadline
	Actor      string
	Reason     string
}

// revokeSQL calls distributed_lock_revoke (schema.sql). A grant that is
// not the key's current, running exclusive one reads as no row.
const revokeSQL = `
SELECT r.lock_key, r.owner_id, r.fence_token, r.expires_at, r.ttl, r.force_at
FROM distributed_lock_revoke($1, $2, $3::bigint, $4, $5) r WHERE r.outcome = '` + lockdb.OutcomeRevoked + `'`

// RevokeLease asks the holder of p's grant to let go, and returns the lease
// after it and the deadline it set (nil: none). ok is false when p.Token is
// not the key's current, running exclusive grant.
func RevokeLease(ctx context.Context, db DBTX, p RevokeParams) (row LeaseRow, forceAt *time.Time, ok bool, err error) {
	var forceAfter *int64
	if p.ForceAfter != nil {
		us := p.ForceAfter.Microseconds()
		forceAfter = &us
	}
	err = db.QueryRow(ctx, revokeSQL, p.Key, p.Token, forceAfter, p.Actor, nullIfEmpty(p.Reason)).
		Scan(&row.Key, &row.Owner, &row.Token, &row.ExpiresAt, &row.TTL, &forceAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return LeaseRow{}, nil, false, nil
	}
	if err != nil {
		return LeaseRow{}, nil, false, Interpret(err)
	}
	return row, forceAt, true, nil
}

// scanRenewal reads renewSQL's row: the lease and the revoke pending on it
// (nil: none).
func scanRenewal(row pgx.Row) (LeaseRow, *Revoke, bool, error) {
	var r LeaseRow
	var requested, forceAt *time.Time
	var reason, actor, role *string
	var remaining *time.Duration
	err := row.Scan(&r.Key, &r.Owner, &r.Token, &r.ExpiresAt, &r.TTL,
		&requested, &reason, &actor, &role, &forceAt, &remaining)
	if errors.Is(err, pgx.ErrNoRows) {
		return LeaseRow{}, nil, false, nil
	}
	if err != nil {
		return LeaseRow{}, nil, false, Interpret(err)
	}
	if requested == nil {
		return r, nil, true, nil
	}
	v := &Revoke{RequestedAt: *requested, ForceAt: forceAt}
	for dst, src := range map[*string]*string{&v.Reason: reason, &v.Actor: actor, &v.CallerRole: role} {
		if src != nil {
			*dst = *src
		}
	}
	if remaining != nil {
		v.Remaining = *remaining
	}
	return r, v, true, nil
}

// boundRevokes reads distributed_lock_session_revokes' rows as JSON (NULL:
// none), by the lease each revokes.
func boundRevokes(raw []byte) (map[BoundRef]*Revoke, error) {
	if raw == nil {
		return nil, nil
	}
	var rows []struct {
		Key         string     `json:"lock_key"`
		Token       int64      `json:"fence_token"`
		RequestedAt time.Time  `json:"requested_at"`
		Reason      *string    `json:"reason"`
		Actor       string     `json:"actor"`
		CallerRole  string     `json:"caller_role"`
		ForceAt     *time.Time `json:"force_at"`
		RemainingUs *int64     `json:"remaining_us"`
	}
	if err := json.Unmarshal(raw, &rows); err != nil {
		return nil, err
	}
	out := make(map[BoundRef]*Revoke, len(rows))
	for _, r := range rows {
		v := &Revoke{RequestedAt: r.RequestedAt, Actor: r.Actor, CallerRole: r.CallerRole, ForceAt: r.ForceAt}
		if r.Reason != nil {
			v.Reason = *r.Reason
		}
		if r.RemainingUs != nil {
			v.Remaining = time.Duration(*r.RemainingUs) * time.Microsecond
		}
		out[BoundRef{Key: r.Key, Token: r.Token}] = v
	}
	return out, nil
}
