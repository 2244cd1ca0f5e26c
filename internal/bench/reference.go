package bench

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// The reference algorithm (DistributedLockService / DistributedLockRepository
// in reference/distributed-lock-reference.txt), ported statement for
// statement so it can be measured, faults included:
//
//   - tryAcquire is one transaction: BEGIN; SELECT … FOR UPDATE; then by
//     branch INSERT (a unique violation means another inserter won: fail),
//     or nothing (another owner, unexpired: fail), or a steal UPDATE with a
//     new token (another owner, expired), or a renew UPDATE keeping the token
//     (same owner); COMMIT. Spring commits a method that returns normally,
//     so a refused attempt commits too (and the unique-violation path's
//     COMMIT comes back as a rollback).
//   - "now" and the expiry come from this process's clock, as the reference
//     takes LocalDateTime.now().
//   - The token comes from a sequence, as the brief for this port asks
//     (the reference used currentTimeMillis): nextToken() is its own call
//     before repo.insert / repo.update, so here it is its own statement,
//     SELECT nextval, inside the transaction. Counted as the reference runs
//     on pgjdbc, which sends BEGIN along with the first statement: acquire
//     is 4 round trips (BEGIN+SELECT FOR UPDATE, nextval, INSERT, COMMIT)
//     and release 2 (BEGIN+DELETE, COMMIT) — the same 6 per cycle this port
//     needs with pgx (BEGIN, SELECT, nextval, INSERT, COMMIT; an
//     autocommitted DELETE). Until 2026-12-02 this port wrote nextval into
//     the INSERT (5 round trips), sparing the reference one; BENCHMARKS.md
//     shows that variant too ("reference-inline").
//   - release deletes the caller's row, matched by owner only, in a
//     transaction of its own.

const refSelectForUpdateSQL = `
SELECT lock_key, owner_id, fence_token, expires_at
FROM reference_lock WHERE lock_key = $1 FOR UPDATE`

// refNextTokenSQL is nextToken() backed by the sequence.
const refNextTokenSQL = `SELECT nextval('reference_lock_seq')`

const refInsertSQL = `
INSERT INTO reference_lock (lock_key, owner_id, fence_token, expires_at)
VALUES ($1, $2, $3, $4)`

// refStealSQL and refRenewSQL are the reference's update(), called with a
// new token (steal) or the row's own (renew).
const refUpdateSQL = `
UPDATE reference_lock SET owner_id = $2, fence_token = $3, expires_at = $4
WHERE lock_key = $1`

// The "reference-inline" variant draws the token inside the write, one
// round trip fewer than the reference as written.
const refInlineInsertSQL = `
INSERT INTO reference_lock (lock_key, owner_id, fence_token, expires_at)
VALUES ($1, $2, nextval('reference_lock_seq'), $3)
RETURNING fence_token`

const refInlineStealSQL = `
UPDATE reference_lock SET owner_id = $2, fence_token = nextval('reference_lock_seq'), expires_at = $3
WHERE lock_key = $1
RETURNING fence_token`

const refDeleteSQL = `DELETE FROM reference_lock WHERE lock_key = $1 AND owner_id = $2`

// uniqueViolation is SQLSTATE 23505 (Spring's DuplicateKeyException).
const uniqueViolation = "23505"

// reference is the ported service: a pool and the reference's fixed TTL.
// inline draws tokens inside the INSERT/UPDATE (see refInlineInsertSQL).
type reference struct {
	pool   *pgxpool.Pool
	ttl    time.Duration
	inline bool
}

// errRefused is a refused attempt (the reference's Optional.empty()).
var errRefused = errors.New("reference: not acquired")

// tryAcquire returns the granted token, or errRefused.
func (r reference) tryAcquire(ctx context.Context, key, owner string) (int64, error) {
	// UTC: the column is a timestamp without time zone (LocalDateTime).
	now := time.Now().UTC()
	expiry := now.Add(r.ttl)
	tx, err := r.pool.Begin(ctx)
	if err != nil {
		return 0, err
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()

	token, err := r.decide(ctx, tx, key, owner, now, expiry)
	if errors.Is(err, errRefused) {
		// Returning normally commits; after a unique violation PostgreSQL
		// answers the COMMIT with a rollback, which pgx reports as an error.
		if cerr := tx.Commit(ctx); cerr != nil && !errors.Is(cerr, pgx.ErrTxCommitRollback) {
			return 0, cerr
		}
		return 0, errRefused
	}
	if err != nil {
		return 0, err
	}
	if err := tx.Commit(ctx); err != nil {
		return 0, err // the reference: a failed commit is a failed acquire
	}
	return token, nil
}

func (r reference) decide(ctx context.Context, tx pgx.Tx, key, owner string, now, expiry time.Time) (int64, error) {
	var (
		rowKey, rowOwner string
		rowToken         int64
		rowExpires       time.Time
	)
	err := tx.QueryRow(ctx, refSelectForUpdateSQL, key).Scan(&rowKey, &rowOwner, &rowToken, &rowExpires)
	if errors.Is(err, pgx.ErrNoRows) {
		token, err := r.write(ctx, tx, refInsertSQL, refInlineInsertSQL, key, owner, expiry)
		var pgErr *pgconn.PgError
		if errors.As(err, &pgErr) && pgErr.Code == uniqueViolation {
			return 0, errRefused
		}
		return token, err
	}
	if err != nil {
		return 0, err
	}
	if rowOwner != owner {
		if rowExpires.After(now) {
			return 0, errRefused
		}
		return r.write(ctx, tx, refUpdateSQL, refInlineStealSQL, key, owner, expiry)
	}
	_, err = tx.Exec(ctx, refUpdateSQL, key, owner, rowToken, expiry)
	return rowToken, err
}

// write runs the reference's insert() or update() with a new token: drawn
// first by nextToken(), or, inline, inside the statement.
func (r reference) write(ctx context.Context, tx pgx.Tx, sql, inlineSQL, key, owner string, expiry time.Time) (int64, error) {
	var token int64
	if r.inline {
		err := tx.QueryRow(ctx, inlineSQL, key, owner, expiry).Scan(&token)
		return token, err
	}
	if err := tx.QueryRow(ctx, refNextTokenSQL).Scan(&token); err != nil {
		return 0, err
	}
	_, err := tx.Exec(ctx, sql, key, owner, token, expiry)
	return token, err
}

// release deletes owner's row of key; false when there was none.
func (r reference) release(ctx context.Context, key, owner string) (bool, error) {
	tag, err := r.pool.Exec(ctx, refDeleteSQL, key, owner)
	if err != nil {
		return false, err
	}
	return tag.RowsAffected() > 0, nil
}
