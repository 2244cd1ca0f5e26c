package protocol_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
)

const sessionLockSQL = `SELECT * FROM distributed_lock_session_lock(session => $1)`

func sessionLockCall(none bool) func(string, prepared) (string, []any) {
	return func(_ string, p prepared) (string, []any) {
		return sessionLockSQL, []any{caseSession(p, none)}
	}
}

// isSession: the call returns session i's row as it is (i < 0: every
// column NULL).
func isSession(i int) check {
	return func(t *testing.T, result map[string]any, _ prepared, after observed) {
		t.Helper()
		if i < 0 {
			for col, v := range result {
				if v != nil {
					t.Errorf("%s = %v; want NULL", col, v)
				}
			}
			return
		}
		s := after.sessions[i]
		ttl, _ := asDuration(result["ttl"])
		expires, _ := result["expires_at"].(time.Time)
		opened, _ := result["opened_at"].(time.Time)
		if result["session_id"] != s.ID || result["owner_id"] != s.Owner || result["host"] != s.Host ||
			result["pid"] != s.PID || !sameJSON(result["metadata"], s.Metadata) || ttl != s.TTL ||
			!expires.Equal(s.ExpiresAt) || !opened.Equal(s.OpenedAt) || result["renewed_at"] != nil {
			t.Errorf("result %v; want session %v", result, *s)
		}
	}
}

// The lock returns the session as it is, and changes nothing.
func TestSessionLock(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "distributed_lock_session_lock")
	f.run(t, []fnCase{
		{name: "a session: its row", state: heldBy(me).inSession(liveSession(theGrant)), call: sessionLockCall(false),
			want: want{row: untouched, check: isSession(0)}},
		{name: "a lapsed session: its row all the same", state: lapsed(me).inSession(lapsedSession(theGrant)), call: sessionLockCall(false),
			want: want{row: untouched, check: isSession(0)}},
		{name: "no such session: NULL columns", state: heldBy(me), call: sessionLockCall(true),
			want: want{row: untouched, check: isSession(-1)}},
	})
}

// Until the caller's transaction ends, the lock keeps the session's row and
// its bound leases' rows from every other writer, and leaves the rows of
// leases it does not bind alone: an unbound lease, and a key granted anew
// since the grant it binds.
func TestSessionLockHoldsTheSessionAndItsLeases(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFixture(t, "distributed_lock_session_lock")
	key := t.Name()
	p := prepareCase(t, f.db, key, heldBy(me).
		and(also{name: "b", state: heldBy(me)}, also{name: "c", state: heldBy(me)}, also{name: "d", state: heldBy(other)}).
		inSession(liveSession(theGrant, grantOf("b"), binding{name: "d", token: keptPrevious})))
	const (
		takeLease   = `SELECT FROM distributed_lock WHERE lock_key = $1 AND slot = 0 FOR NO KEY UPDATE NOWAIT`
		takeSession = `SELECT FROM distributed_lock_session WHERE session_id = $1 FOR NO KEY UPDATE NOWAIT`
	)
	tx, err := f.db.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	if _, err := tx.Exec(ctx, sessionLockSQL, p.sessions[0]); err != nil {
		t.Fatal(err)
	}
	locked := func(what, sql string, arg any) bool {
		t.Helper()
		_, err := f.db.Exec(ctx, sql, arg)
		var pgErr *pgconn.PgError
		switch {
		case errors.As(err, &pgErr) && pgErr.Code == "55P03":
			return true
		case err != nil:
			t.Fatalf("lock %s: %v", what, err)
		}
		return false
	}
	held := map[string]bool{"the session": true, key: true, p.set.keys["b"]: true, p.set.keys["c"]: false, p.set.keys["d"]: false}
	check := func(open bool) {
		t.Helper()
		for what, want := range held {
			sql, arg := takeLease, any(what)
			if what == "the session" {
				sql, arg = takeSession, p.sessions[0]
			}
			if got := locked(what, sql, arg); got != (want && open) {
				t.Errorf("%s locked by the caller's transaction: %v; want %v (transaction open: %v)", what, got, want && open, open)
			}
		}
	}
	check(true)
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	check(false)
}
