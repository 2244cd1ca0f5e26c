package lockview

import (
	"context"
	"time"

	"github.com/lockctl/lockctl/locker"
	"github.com/lockctl/lockctl/store"
)

// Holder is one lease of a shared or semaphore key: a row of the key at a
// slot above 0 (store/sql/functions/11_shared.sql), with its own owner,
// token and expiry.
type Holder struct {
	Key        string        `db:"lock_key"`
	Slot       int32         `db:"slot"`
	Owner      string        `db:"owner_id"`
	Token      int64         `db:"fence_token"`
	AcquiredAt time.Time     `db:"acquired_at"`
	ExpiresAt  time.Time     `db:"expires_at"`
	TTL        time.Duration `db:"ttl"`
	// Remaining is ExpiresAt minus the database's clock when read.
	Remaining time.Duration `db:"remaining"`
}

// holdersSQL reads the running leases of the keys $1, by key and slot. A
// slot whose lease was released or ran out holds nothing, and is left out
// (distributed_lock_live, the one liveness rule).
const holdersSQL = `
SELECT h.lock_key, h.slot, h.owner_id, h.fence_token, h.acquired_at, h.expires_at, h.ttl,
       h.expires_at - c.ts AS remaining
FROM distributed_lock h, (SELECT distributed_lock_now() AS ts) c
WHERE h.lock_key = ANY($1) AND h.slot > 0 AND distributed_lock_live(h, c.ts)
ORDER BY h.lock_key, h.slot`

// HoldersOf reads the running leases of the holders of keys (shared and
// semaphore keys; an exclusive key has none), by key, each key's in slot
// order.
func HoldersOf(ctx context.Context, db store.DBTX, keys []string) (map[string][]Holder, error) {
	out := map[string][]Holder{}
	if len(keys) == 0 {
		return out, nil
	}
	hs, err := collect[Holder](db.Query(ctx, holdersSQL, keys))
	if err != nil {
		return nil, err
	}
	for _, h := range hs {
		out[h.Key] = append(out[h.Key], h)
	}
	return out, nil
}

// GroupKeys are the keys of ls whose rows are a running shared or semaphore
// group's, whose holders HoldersOf reads.
func GroupKeys(ls []Lock) []string {
	var keys []string
	for _, l := range ls {
		if l.Mode != "" && l.Mode != locker.ModeExclusive && l.ReleasedAt == nil {
			keys = append(keys, l.Key)
		}
	}
	return keys
}
