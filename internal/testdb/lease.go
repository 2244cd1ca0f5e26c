package testdb

import (
	"context"
	"testing"
	"time"

	"github.com/lockctl/lockctl/store"
)

// ageLockSQL moves every time of one key's rows (its own and its holders')
// back by the same amount, as far as its own row's lease needs, so
// the row keeps its shape (a grant still comes before its expiry, a release
// after its grant) and only its place on the database clock changes.
// wake_until is left alone: it belongs to waiters, who live in real time.
const ageLockSQL = `
UPDATE distributed_lock l SET
    expires_at  = l.expires_at - s.shift,
    acquired_at = l.acquired_at - s.shift,
    renewed_at  = l.renewed_at - s.shift,
    released_at = l.released_at - s.shift,
    delay_until = l.delay_until - s.shift
FROM (SELECT CASE WHEN $2::bigint < 0
                  THEN greatest(expires_at - distributed_lock_now(), interval '0') + interval '1 millisecond'
                  ELSE $2::bigint * interval '1 microsecond' END AS shift
      FROM distributed_lock WHERE lock_key = $1 AND slot = 0) s
WHERE l.lock_key = $1`

// AgeLock makes key's row look as if d had passed on the database clock:
// a lease with less than d left is then expired, a released lock has been
// free for d longer, a lock-delay with less than d left is over. The lease contract reads only the database clock, so
// this is what waiting d would do, without the wait. The row must exist
// and must not be locked by an open transaction (the update would wait).
func AgeLock(t testing.TB, db store.DBTX, key string, d time.Duration) {
	t.Helper()
	if d < 0 {
		t.Fatalf("AgeLock %q by %s: want a duration of zero or more", key, d)
	}
	ageLock(t, db, key, d.Microseconds())
}

// ExpireLease makes key's lease run out now: its row ages by the time the
// lease had left, plus a millisecond, as if its TTL had passed. An expired
// or released row ages by a millisecond.
func ExpireLease(t testing.TB, db store.DBTX, key string) {
	t.Helper()
	ageLock(t, db, key, -1)
}

func ageLock(t testing.TB, db store.DBTX, key string, micros int64) {
	t.Helper()
	tag, err := db.Exec(context.Background(), ageLockSQL, key, micros)
	if err != nil {
		t.Fatalf("age lock %q: %v", key, err)
	}
	if tag.RowsAffected() != 1 {
		t.Fatalf("age lock %q: no such row", key)
	}
}
