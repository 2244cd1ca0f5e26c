package demo

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/lockctl/lockctl/locker"
	"github.com/lockctl/lockctl/store"
)

// accounts are the bank of the transfer scene; each has a lock key
// accountKey(name) and a row in demo_account.
var accounts = []string{"alice", "bob", "carol"}

func accountKey(name string) string { return "accounts:" + name }

// openingBalance is every account's balance when the demo first runs.
const openingBalance = 1000

// createAccountsSQL is the bank the transfer and the tellers write: one row
// per account. Like demo_resource it is the demo's, beside the lock tables.
const createAccountsSQL = `
CREATE TABLE IF NOT EXISTS demo_account (
    account    text        PRIMARY KEY,
    balance    bigint      NOT NULL CHECK (balance >= 0),
    updated_at timestamptz NOT NULL DEFAULT distributed_lock_now()
)`

// openAccountsSQL opens every account once; a demo that runs again in the
// same schema keeps the balances it left.
const openAccountsSQL = `
INSERT INTO demo_account (account, balance)
SELECT unnest($1::text[]), $2
ON CONFLICT (account) DO NOTHING`

func createAccounts(ctx context.Context, pool *pgxpool.Pool) error {
	if _, err := pool.Exec(ctx, createAccountsSQL); err != nil {
		return fmt.Errorf("demo: create demo_account: %w", store.Interpret(err))
	}
	if _, err := pool.Exec(ctx, openAccountsSQL, accounts, openingBalance); err != nil {
		return fmt.Errorf("demo: open demo_account: %w", store.Interpret(err))
	}
	return nil
}

// moveSQL moves up to $3 from account $1 to account $2 (never below zero)
// in one statement: both rows change together or neither does.
const moveSQL = `
WITH amount AS (
    SELECT least(balance, $3::bigint) AS n FROM demo_account WHERE account = $1
)
UPDATE demo_account a
SET balance = a.balance + CASE a.account WHEN $1 THEN -amount.n ELSE amount.n END,
    updated_at = distributed_lock_now()
FROM amount
WHERE a.account IN ($1, $2)`

// postSQL adds $2 (negative: a withdrawal, never below zero) to account $1.
const postSQL = `
UPDATE demo_account
SET balance = greatest(0, balance + $2::bigint), updated_at = distributed_lock_now()
WHERE account = $1`

// fencedTx runs write in a transaction that first proves every lease with
// locker.Fence, which also keeps each key from changing hands until commit.
// false: a lease was lost, and nothing was written.
func fencedTx(ctx context.Context, pool *pgxpool.Pool, leases []locker.Lease, write func(pgx.Tx) error) (bool, error) {
	err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		for _, lease := range leases {
			if err := locker.Fence(ctx, tx, lease); err != nil {
				if errors.Is(err, locker.ErrNotHeld) {
					return errRefused
				}
				return err
			}
		}
		return write(tx)
	})
	if errors.Is(err, errRefused) {
		return false, nil
	}
	return err == nil, store.Interpret(err)
}

// transfer moves money between two accounts, which must both be locked at
// once: it takes both keys in one all-or-nothing acquire (a set's waiting Acquire),
// waiting until it can have both, so it never holds one while it waits for
// the other and never deadlocks with another transfer. The two keys show
// in the console as held by one owner, then released together.
func (s *Sim) transfer(ctx context.Context, index int) {
	r := s.rng(roleTransfer, index)
	lk := s.storyLocker(accountTTL, "transfer (both accounts at once)")
	owner := fmt.Sprintf("transfer-%d", index+1)
	for ctx.Err() == nil {
		j := s.nextTransfer(r)
		from, to := accounts[j.from], accounts[j.to]
		if !sleep(ctx, j.idle) {
			return
		}
		keys := []string{accountKey(from), accountKey(to)}
		leases, err := s.takeAll(ctx, lk, keys, owner)
		if err != nil {
			continue
		}
		ka := lk.Keepalive(ctx, s.pool, leases...)
		moved := false
		if sleep(ka.Context(), j.work/2) {
			moved = s.account(ctx, ka.Leases(), func(tx pgx.Tx) error {
				_, err := tx.Exec(ctx, moveSQL, from, to, j.amount)
				return err
			})
		}
		if moved {
			s.stats.transfers.Add(1)
			sleep(ka.Context(), j.work-j.work/2)
		}
		ka.Stop()
		// Released together even when an operator took one of them
		// meanwhile: one Release frees every lease still current.
		s.giveAll(ctx, lk, ka.Leases())
	}
}

// transferJob is one transfer, drawn before it starts so the sequence of
// transfers depends only on the seed: amount from accounts[from] to
// accounts[to], two different accounts.
type transferJob struct {
	idle, work time.Duration
	from, to   int
	amount     int64
}

func (s *Sim) nextTransfer(r *rand.Rand) transferJob {
	from := r.IntN(len(accounts))
	return transferJob{
		idle:   s.between(r, 1*time.Second, 3*time.Second),
		from:   from,
		to:     (from + 1 + r.IntN(len(accounts)-1)) % len(accounts),
		amount: 10 + r.Int64N(190),
		work:   s.between(r, 1500*time.Millisecond, 3*time.Second),
	}
}

// teller posts deposits and withdrawals to one account at a time, under
// that account's key alone: it contends with the transfers for the keys.
func (s *Sim) teller(ctx context.Context, index int) {
	r := s.rng(roleTeller, index)
	lk := s.storyLocker(accountTTL, "teller (one account)")
	owner := fmt.Sprintf("teller-%d", index+1)
	for ctx.Err() == nil {
		idle := s.between(r, 500*time.Millisecond, 2500*time.Millisecond)
		account := accounts[r.IntN(len(accounts))]
		amount := r.Int64N(201) - 100
		work := s.between(r, 1*time.Second, 2500*time.Millisecond)
		if !sleep(ctx, idle) {
			return
		}
		lease, err := s.take(ctx, lk, accountKey(account), owner)
		if err != nil {
			continue
		}
		ka := lk.Keepalive(ctx, s.pool, lease)
		if sleep(ka.Context(), work/2) {
			s.account(ctx, []locker.Lease{ka.Leases()[0]}, func(tx pgx.Tx) error {
				_, err := tx.Exec(ctx, postSQL, account, amount)
				return err
			})
			sleep(ka.Context(), work-work/2)
		}
		ka.Stop()
		s.give(ctx, lk, ka.Leases()[0]) // a lease lost meanwhile is only dropped
	}
}

// account runs one fenced write to demo_account; false: it did not commit.
func (s *Sim) account(ctx context.Context, leases []locker.Lease, write func(pgx.Tx) error) bool {
	ok, err := fencedTx(ctx, s.pool, leases, write)
	if err != nil {
		_ = s.failed(ctx, err)
		return false
	}
	return ok
}
