package anylang

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/lockctl/lockctl/internal/history"
	"github.com/lockctl/lockctl/internal/lockview"
	"github.com/lockctl/lockctl/internal/testdb"
	"github.com/lockctl/lockctl/locker"
)

// runPermits is what Share.java's permit threads do, through locker: take
// one of permits permits of g.keys[0] (refused: pause up to a quarter of
// hold), hold it, renew, hold, release.
func (g *goClient) runPermits(ctx context.Context, until time.Time, permits int) {
	key := g.keys[0]
	for time.Now().Before(until) {
		call := g.clock.now()
		lease, err := testdb.One(g.lk.Acquire(ctx, g.pool, locker.Request{Keys: []locker.Key{{Name: key, Mode: locker.ModeSemaphore, Permits: permits}}, Owner: g.owner}))
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
		if err != nil && op.Result != history.NotHeld {
			return
		}
		g.sleepUpTo(g.hold)

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

// goReader takes key shared for owner, holds it up to hold and releases it,
// over and over until ctx ends; it returns the tokens it was granted. Every
// lease it took is released when it returns.
func goReader(ctx context.Context, lk *locker.Locker, pool *pgxpool.Pool, key, owner string, hold time.Duration, rnd *rand.Rand) ([]int64, error) {
	var tokens []int64
	for ctx.Err() == nil {
		lease, err := testdb.One(lk.Acquire(ctx, pool, locker.Request{Keys: []locker.Key{{Name: key, Mode: locker.ModeShared}}, Owner: owner}))
		if errors.Is(err, locker.ErrHeld) {
			sleep(ctx, hold/4)
			continue
		}
		if err != nil {
			if ctx.Err() != nil {
				break
			}
			return tokens, fmt.Errorf("%s: take %q shared: %w", owner, key, err)
		}
		tokens = append(tokens, lease.Token)
		sleep(ctx, time.Duration(rnd.Int64N(int64(hold)+1)))
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		_, err = testdb.One(lk.Release(rctx, pool, lease))
		cancel()
		if err != nil {
			return tokens, fmt.Errorf("%s: release %q (token %d): %w", owner, key, lease.Token, err)
		}
	}
	return tokens, nil
}

func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

// holderSamples is what a user watching a semaphore key's holders (as the
// console reads them, lockview.HoldersOf) would have seen.
type holderSamples struct {
	n     int // samples taken
	most  int // most holders seen at once
	full  int // samples with every permit held
	mixed int // samples with Java and Go owners holding permits at once
	// over describes the first samples with more holders than permits.
	over []string
}

// sampleHolders reads key's holders again and again until stop is called,
// which returns what it saw: at least one sample.
func sampleHolders(ctx context.Context, pool *pgxpool.Pool, key string, permits int) (stop func() (holderSamples, error)) {
	done := make(chan struct{})
	var (
		s   holderSamples
		err error
		wg  sync.WaitGroup
	)
	wg.Go(func() {
		for {
			byKey, e := lockview.HoldersOf(ctx, pool, []string{key})
			if e != nil {
				err = e
				return
			}
			s.add(byKey[key], permits)
			select {
			case <-done:
				return
			default:
			}
		}
	})
	return func() (holderSamples, error) {
		close(done)
		wg.Wait()
		return s, err
	}
}

func (s *holderSamples) add(hs []lockview.Holder, permits int) {
	s.n++
	s.most = max(s.most, len(hs))
	if len(hs) == permits {
		s.full++
	}
	sides := map[string]bool{}
	var who []string
	for _, h := range hs {
		sides[side(h.Owner)] = true
		who = append(who, fmt.Sprintf("%s (token %d)", h.Owner, h.Token))
	}
	if sides["java"] && sides["go"] {
		s.mixed++
	}
	if len(hs) > permits && len(s.over) < 3 {
		s.over = append(s.over, fmt.Sprintf("%d holders: %s", len(hs), strings.Join(who, ", ")))
	}
}
