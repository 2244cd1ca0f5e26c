package testdb

import (
	"context"
	"testing"
	"time"

	"github.com/lockctl/lockctl/store"
)

// LogEvent writes one event to the log as the protocol would, age before
// the database's clock: for the readers of the log (the hot keys, the
// histograms) to read events of any age without waiting for them.
func LogEvent(t testing.TB, db store.DBTX, age time.Duration, key, kind string, token int64, detail string) {
	t.Helper()
	if _, err := db.Exec(context.Background(), `INSERT INTO distributed_lock_event (occurred_at, lock_key, kind, owner_id, fence_token, actor, detail)
		VALUES (clock_timestamp() - $1::bigint * interval '1 microsecond', $2, $3, 'o', $4, 'a', $5::jsonb)`,
		age.Microseconds(), key, kind, token, detail); err != nil {
		t.Fatal(err)
	}
}
