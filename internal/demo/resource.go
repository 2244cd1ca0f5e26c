package demo

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/lockctl/lockctl/locker"
	"github.com/lockctl/lockctl/store"
)

// createResourceSQL is the fenced resource the ledger writers update: one
// row per lock key, remembering the largest token that wrote it. It lives
// beside the lock tables (same schema) but is the demo's, not lockctl's.
const createResourceSQL = `
CREATE TABLE IF NOT EXISTS demo_resource (
    resource_key text        PRIMARY KEY,
    last_token   bigint      NOT NULL,
    last_owner   text        NOT NULL,
    writes       bigint      NOT NULL DEFAULT 1,
    updated_at   timestamptz NOT NULL DEFAULT distributed_lock_now()
)`

func createResource(ctx context.Context, pool *pgxpool.Pool) error {
	if _, err := pool.Exec(ctx, createResourceSQL); err != nil {
		return fmt.Errorf("demo: create demo_resource: %w", store.Interpret(err))
	}
	return nil
}

// writeResourceSQL is the resource's own defence, the one an outside system
// would use: a write carries its token and is applied only if no larger
// token has written (0 rows affected: refused).
const writeResourceSQL = `
INSERT INTO demo_resource AS r (resource_key, last_token, last_owner)
VALUES ($1, $2, $3)
ON CONFLICT (resource_key) DO UPDATE
SET last_token = excluded.last_token, last_owner = excluded.last_owner,
    writes = r.writes + 1, updated_at = distributed_lock_now()
WHERE r.last_token <= excluded.last_token`

// Why a fenced write was refused.
const (
	refusedByFence = "Fence: lease lost"
	refusedByToken = "token check: newer token wrote"
)

// fencedWrite updates lease.Key's resource row in one transaction that
// first proves the lease with locker.Fence (which keeps the lease from
// changing hands until commit) and then applies the token check. It returns
// "" when the write committed, or why it was refused.
func fencedWrite(ctx context.Context, pool *pgxpool.Pool, lease locker.Lease) (refused string, err error) {
	err = pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		if err := locker.Fence(ctx, tx, lease); err != nil {
			if errors.Is(err, locker.ErrNotHeld) {
				refused = refusedByFence
				return errRefused
			}
			return err
		}
		tag, err := tx.Exec(ctx, writeResourceSQL, lease.Key, lease.Token, lease.Owner)
		if err != nil {
			return store.Interpret(err)
		}
		if tag.RowsAffected() == 0 {
			refused = refusedByToken
			return errRefused
		}
		return nil
	})
	if errors.Is(err, errRefused) {
		return refused, nil
	}
	return "", err
}

// errRefused rolls a refused write's transaction back.
var errRefused = errors.New("demo: write refused")
