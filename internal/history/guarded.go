package history

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/lockctl/lockctl/internal/lockview"
	"github.com/lockctl/lockctl/store"
)

// The guarded resource the workloads write under a fence. guardedOrderSQL
// numbers each key's fenced transactions in commit order — the counter row
// stays locked until the transaction commits, so the next one on the key
// reads the committed value — and guardedWriteSQL stores the write with that
// number and the token of the latest grant on the key the statement can see
// (the event log must hold grants: locker.Config.LogGrants).
//
// Beside it, guarded_event_tx names the top-level transaction of every lock
// event, written by a trigger in that transaction (pg_current_xact_id is the
// top-level one even inside a subtransaction, where the event row's xmin
// would not be), so the checker can tell which grants became visible
// together.
const (
	guardedTablesSQL = `
CREATE TABLE guarded_order (lock_key text PRIMARY KEY, n bigint NOT NULL);
CREATE TABLE guarded_write (
    lock_key   text   NOT NULL,
    token      bigint NOT NULL,
    writer     text   NOT NULL,
    writer_seq bigint NOT NULL,
    commit_seq bigint NOT NULL,
    seen_token bigint,
    PRIMARY KEY (lock_key, commit_seq),
    UNIQUE (writer, writer_seq));
CREATE TABLE guarded_event_tx (event_id bigint PRIMARY KEY, tx bigint NOT NULL);
CREATE FUNCTION guarded_event_tx() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER SET search_path FROM CURRENT AS $$
BEGIN
    INSERT INTO guarded_event_tx VALUES (NEW.event_id, pg_current_xact_id()::text::bigint);
    RETURN NULL;
END $$;
CREATE TRIGGER guarded_event_tx AFTER INSERT ON distributed_lock_event
    FOR EACH ROW EXECUTE FUNCTION guarded_event_tx()`
	guardedOrderSQL = `
INSERT INTO guarded_order AS o (lock_key, n) VALUES ($1, 1)
ON CONFLICT (lock_key) DO UPDATE SET n = o.n + 1 RETURNING n`
	guardedWriteSQL = `
INSERT INTO guarded_write (lock_key, token, writer, writer_seq, commit_seq, seen_token)
VALUES ($1, $2, $3, $4, $5,
        (SELECT e.fence_token FROM distributed_lock_event e
         WHERE e.lock_key = $1 AND e.kind IN ('acquired', 'stolen', 'downgraded')
         ORDER BY e.event_id DESC LIMIT 1))`
	guardedRowsSQL = `
SELECT lock_key, token, writer, writer_seq, commit_seq, coalesce(seen_token, 0)
FROM guarded_write`
	eventTxSQL = `SELECT event_id, tx FROM guarded_event_tx`
	// Event ids are drawn while the key's row is locked, so on one key
	// event_id order is the order the operations took effect.
	eventLogSQL = `
SELECT event_id, occurred_at, lock_key, kind, owner_id, fence_token,
       actor, caller_role, previous_owner, previous_token, detail
FROM distributed_lock_event ORDER BY event_id`
)

// CreateGuarded creates the guarded table in db's current schema.
func CreateGuarded(ctx context.Context, db store.DBTX) error {
	if _, err := db.Exec(ctx, guardedTablesSQL, pgx.QueryExecModeSimpleProtocol); err != nil {
		return fmt.Errorf("history: create guarded table: %w", err)
	}
	return nil
}

// WriteGuarded makes writer's write number writerSeq on key with token, in
// tx: the caller has proven its lease in tx (locker.Fence) — or, to show the
// checker catches it, deliberately not — and commits tx itself.
func WriteGuarded(ctx context.Context, tx pgx.Tx, key string, token int64, writer string, writerSeq int64) error {
	var n int64
	if err := tx.QueryRow(ctx, guardedOrderSQL, key).Scan(&n); err != nil {
		return fmt.Errorf("history: number the write: %w", err)
	}
	if _, err := tx.Exec(ctx, guardedWriteSQL, key, token, writer, writerSeq, n); err != nil {
		return fmt.Errorf("history: guarded write: %w", err)
	}
	return nil
}

// Observe reads what the database kept: the event log in event_id order,
// the guarded table, and the sessions with their bindings.
func Observe(ctx context.Context, db store.DBTX) (Observed, error) {
	var obs Observed
	rows, err := db.Query(ctx, eventLogSQL)
	if err != nil {
		return obs, fmt.Errorf("history: read the event log: %w", err)
	}
	if obs.Events, err = pgx.CollectRows(rows, pgx.RowToStructByName[lockview.Event]); err != nil {
		return obs, fmt.Errorf("history: read the event log: %w", err)
	}
	if rows, err = db.Query(ctx, eventTxSQL); err != nil {
		return obs, fmt.Errorf("history: read the events' transactions: %w", err)
	}
	obs.EventTx = map[int64]int64{}
	var id, tx int64
	if _, err = pgx.ForEachRow(rows, []any{&id, &tx}, func() error {
		obs.EventTx[id] = tx
		return nil
	}); err != nil {
		return obs, fmt.Errorf("history: read the events' transactions: %w", err)
	}
	if rows, err = db.Query(ctx, guardedRowsSQL); err != nil {
		return obs, fmt.Errorf("history: read the guarded table: %w", err)
	}
	var w GuardedWrite
	var seen int64
	_, err = pgx.ForEachRow(rows, []any{&w.Key, &w.Token, &w.Writer, &w.WriterSeq, &w.CommitSeq, &seen}, func() error {
		obs.Writes = append(obs.Writes, w)
		obs.SeenToken = append(obs.SeenToken, seen)
		return nil
	})
	if err != nil {
		return obs, fmt.Errorf("history: read the guarded table: %w", err)
	}
	return obs, observeSessions(ctx, db, &obs)
}
