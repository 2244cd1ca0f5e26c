package protocol_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// revokeRow is an operator's revoke of the prepared grant (16_revoke.sql).
type revokeRow struct {
	forceIn *time.Duration // force_at − now; nil: no deadline
	reason  string
	token   tok // the grant revoked; 0: keptToken
}

// revoked adds a revoke of the key's grant to the state.
func (s state) revoked(r revokeRow) state {
	s.revoke = &r
	return s
}

func deadlineIn(d time.Duration) *time.Duration { return &d }

// prepareRevoke writes r, once the key is prepared, as the owner (nobody
// else may write revokes).
func prepareRevoke(t *testing.T, db *pgxpool.Pool, p prepared, r *revokeRow) {
	t.Helper()
	if r == nil {
		return
	}
	token := tokenArg(p, keptToken)
	if r.token != 0 {
		token = tokenArg(p, r.token)
	}
	var forceUs *int64
	if r.forceIn != nil {
		us := r.forceIn.Microseconds()
		forceUs = &us
	}
	if _, err := db.Exec(context.Background(), `
INSERT INTO distributed_lock_revoke (lock_key, fence_token, requested_at, force_at, reason, actor)
VALUES ($1, $2, distributed_lock_now(), distributed_lock_now() + $3::bigint * interval '1 microsecond', $4, 'alice')`,
		p.key, token, forceUs, null(r.reason)); err != nil {
		t.Fatal(err)
	}
}
