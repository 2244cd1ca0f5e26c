package store

import (
	"context"

	"github.com/jackc/pgx/v5"
)

const eventColumns = `e.event_id, e.occurred_at, e.lock_key, e.kind, e.owner_id, e.fence_token,
	e.actor, e.previous_owner, e.previous_token, e.detail`

const keyEventsSQL = `
SELECT ` + eventColumns + ` FROM distributed_lock_event e
WHERE e.lock_key = $1 ORDER BY e.event_id DESC LIMIT $2`

// KeyEvents returns key's latest events, newest first.
func KeyEvents(ctx context.Context, db DBTX, key string, limit int) ([]Event, error) {
	return collect[Event](db.Query(ctx, keyEventsSQL, key, limit))
}

const recentEventsSQL = `
SELECT ` + eventColumns + ` FROM distributed_lock_event e
WHERE e.event_id > $1 ORDER BY e.event_id DESC LIMIT $2`

// RecentEvents returns the latest events with an id above afterID, newest
// first (afterID 0: the latest of all).
func RecentEvents(ctx context.Context, db DBTX, afterID int64, limit int) ([]Event, error) {
	return collect[Event](db.Query(ctx, recentEventsSQL, afterID, limit))
}

const staleWriteSQL = `
INSERT INTO distributed_lock_event (lock_key, kind, owner_id, fence_token, actor, detail)
VALUES ($1, 'stale_write_rejected', $2, $3, $4, $5::jsonb)`

// RecordStaleWrite logs that a write fenced with ref's token was refused.
func RecordStaleWrite(ctx context.Context, db DBTX, ref LeaseRef, actor string, detail map[string]any) error {
	_, err := db.Exec(ctx, staleWriteSQL, ref.Key, ref.Owner, ref.Token, actor, orEmpty(detail))
	return Interpret(err)
}

func collect[T any](rows pgx.Rows, err error) ([]T, error) {
	if err != nil {
		return nil, Interpret(err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowToStructByName[T])
	if err != nil {
		return nil, Interpret(err)
	}
	return out, nil
}

func orEmpty(m map[string]any) map[string]any {
	if m == nil {
		return map[string]any{}
	}
	return m
}
