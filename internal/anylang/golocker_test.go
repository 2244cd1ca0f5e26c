package anylang

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/lockctl/lockctl/internal/history"
	"github.com/lockctl/lockctl/internal/testdb"
	"github.com/lockctl/lockctl/locker"
)

// goClient is the Go side of the contention test, doing what Contend.java's
// threads do, through locker: take a random key (refused: pause up to a
// quarter of hold), hold it, renew, hold, one fenced write to the guarded
// table, release; one hold in pauseOneIn outlives its lease first.
type goClient struct {
	id         int
	owner      string
	lk         *locker.Locker
	pool       *pgxpool.Pool
	rec        *history.Recorder
	clock      wallClock
	keys       []string
	ttl, hold  time.Duration
	pauseOneIn int
	rnd        *rand.Rand
}

func (g *goClient) run(ctx context.Context, until time.Time) {
	var writerSeq int64
	for time.Now().Before(until) {
		key := g.keys[g.rnd.IntN(len(g.keys))]
		call := g.clock.now()
		lease, err := testdb.Try(ctx, g.lk, g.pool, key, g.owner)
		op := history.Op{Client: g.id, Kind: history.Grant, Key: key, Owner: g.owner, Call: call, Return: g.clock.now()}
		op.Result, op.Err = history.GrantResultOf(err)
		if err == nil {
			op.Granted(lease)
		}
		g.rec.Add(op)
		if op.Result == history.Held {
			g.sleepUpTo(g.hold / 4)
			continue
		}
		if err != nil {
			return
		}

		g.sleepUpTo(g.hold)
		call = g.clock.now()
		renewed, err := testdb.One(g.lk.Renew(ctx, g.pool, lease))
		op = history.Op{Client: g.id, Kind: history.Renew, Key: key, Owner: g.owner, Token: lease.Token, Call: call, Return: g.clock.now()}
		op.Result, op.Err = history.ResultOf(err)
		if err == nil {
			op.Renewed(renewed)
		}
		g.rec.Add(op)
		// A lost lease goes on to its fenced write, which the fence refuses.
		if err != nil && op.Result != history.NotHeld {
			return
		}
		g.sleepUpTo(g.hold)
		if g.pauseOneIn > 0 && g.rnd.IntN(g.pauseOneIn) == 0 {
			time.Sleep(g.ttl * 3 / 2)
		}

		writerSeq++
		if !g.fencedWrite(ctx, lease, writerSeq) {
			return
		}

		call = g.clock.now()
		_, err = testdb.One(g.lk.Release(ctx, g.pool, lease))
		op = history.Op{Client: g.id, Kind: history.Release, Key: key, Owner: g.owner, Token: lease.Token, Call: call, Return: g.clock.now()}
		op.Result, op.Err = history.ResultOf(err)
		g.rec.Add(op)
		if err != nil && op.Result != history.NotHeld {
			return
		}
	}
}

// fencedWrite is one transaction: Fence, guarded write, commit. False after
// an error (recorded).
func (g *goClient) fencedWrite(ctx context.Context, lease locker.Lease, writerSeq int64) bool {
	op := history.Op{Client: g.id, Kind: history.Write, Key: lease.Key, Owner: g.owner, Token: lease.Token,
		WriterSeq: writerSeq, Call: g.clock.now()}
	err := func() error {
		op.Result = history.Failed
		tx, err := g.pool.Begin(ctx)
		if err != nil {
			return err
		}
		defer tx.Rollback(ctx)
		if err := locker.Fence(ctx, tx, lease); err != nil {
			if errors.Is(err, locker.ErrNotHeld) {
				op.Result = history.NotHeld
				return nil
			}
			return err
		}
		if err := history.WriteGuarded(ctx, tx, lease.Key, lease.Token, g.owner, writerSeq); err != nil {
			return err
		}
		if err := tx.Commit(ctx); err != nil {
			op.Result = history.Unknown
			return fmt.Errorf("commit: %w", err)
		}
		op.Result = history.OK
		return nil
	}()
	op.Return = g.clock.now()
	if err != nil {
		op.Err = err.Error()
	}
	g.rec.Add(op)
	return err == nil
}

func (g *goClient) sleepUpTo(d time.Duration) {
	time.Sleep(time.Duration(g.rnd.Int64N(int64(d) + 1)))
}
