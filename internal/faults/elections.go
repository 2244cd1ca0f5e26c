package faults

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/lockctl/lockctl/internal/history"
	"github.com/lockctl/lockctl/locker"
	"github.com/lockctl/lockctl/locker/election"
)

// ElectionKey is the key the election workers campaign for.
const ElectionKey = "leader-0"

// electionClient numbers the election workers' clients in the history,
// apart from the other workers'.
const electionClient = 1000

// elections are the suite's candidates and observers of ElectionKey:
// candidates campaign, lead for a moment and resign (their grants and
// resignations are in the history, which the checker holds to the lock
// contract: no two leaders' terms overlap, terms grow), while observers
// record every term Observe reports (CheckTerms: never a term going back,
// never one nobody was granted). The injector's restarts and kills of
// backends hit them as they hit every worker.
type elections struct {
	candidates []*election.Election
	observers  []*election.Election
	rec        *history.Recorder

	mu       sync.Mutex
	observed [][]int64 // per observer, in the order reported
}

// newElections makes n candidates (n ≥ 1) and two observers of
// ElectionKey on pool, their leases as lc makes them, LogGrants on (the
// checker reads every term back from the event log) and resignations
// durable (a crash never brings a resigned leader's lease back, so the
// history's releases are what the server kept).
func newElections(pool *pgxpool.Pool, dsn string, lc locker.Config, n int, rec *history.Recorder) (*elections, error) {
	lc.LogGrants, lc.DurableRelease = true, true
	e := &elections{rec: rec, observed: make([][]int64, 2)}
	for i := range n {
		c, err := election.New(pool, ElectionKey, election.Config{Locker: lc, Owner: fmt.Sprintf("candidate-%d", i)})
		if err != nil {
			return nil, err
		}
		e.candidates = append(e.candidates, c)
	}
	listen := func(ctx context.Context) (*pgx.Conn, error) { return pgx.Connect(ctx, dsn) }
	for range e.observed {
		o, err := election.New(pool, ElectionKey, election.Config{Recheck: lc.TTL, Listen: listen})
		if err != nil {
			return nil, err
		}
		e.observers = append(e.observers, o)
	}
	return e, nil
}

// run runs the candidates and observers until ctx ends.
func (e *elections) run(ctx context.Context, seed uint64) {
	if e == nil {
		return
	}
	var wg sync.WaitGroup
	for i, c := range e.candidates {
		rng := rand.New(rand.NewPCG(seed, uint64(electionClient+i)))
		wg.Go(func() { e.campaign(ctx, electionClient+i, c, rng) })
	}
	for i, o := range e.observers {
		wg.Go(func() {
			for l := range o.Observe(ctx) {
				e.mu.Lock()
				e.observed[i] = append(e.observed[i], l.Term)
				e.mu.Unlock()
			}
		})
	}
	wg.Wait()
}

// campaign is one candidate's loop: campaign, lead for up to 30 ms, resign.
func (e *elections) campaign(ctx context.Context, client int, c *election.Election, rng *rand.Rand) {
	for ctx.Err() == nil {
		op := history.Op{Client: client, Kind: history.Grant, Key: ElectionKey, Owner: c.Owner(), Call: e.rec.Now()}
		_, err := c.Campaign(ctx, "v")
		op.Return = e.rec.Now()
		lease, leads := c.Lease()
		op.Result, op.Err = history.GrantResultOf(err)
		if leads {
			op.Granted(lease)
			if err != nil { // won, then lost before its proclamation
				op.Result = history.Unknown
			}
		}
		e.rec.Add(op)
		if !leads {
			sleepCtx(ctx, time.Duration(5+rng.IntN(20))*time.Millisecond)
			continue
		}
		sleepCtx(ctx, time.Duration(rng.IntN(30))*time.Millisecond) // the leader's work
		rel := history.Op{Client: client, Kind: history.Release, Key: ElectionKey, Owner: c.Owner(), Token: lease.Token, Call: e.rec.Now()}
		err = c.Resign(context.WithoutCancel(ctx))
		rel.Return = e.rec.Now()
		rel.Result, rel.Err = history.ResultOf(errors.Unwrap(err))
		e.rec.Add(rel)
	}
}

// check is what the observers reported, checked against the event log.
func (e *elections) check(obs history.Observed) []string {
	if e == nil {
		return nil
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	var violations []string
	for i, terms := range e.observed {
		violations = append(violations, history.CheckTerms(fmt.Sprintf("observer-%d", i), ElectionKey, terms, obs)...)
	}
	return violations
}

// terms is how many terms the observers reported in all.
func (e *elections) terms() int {
	if e == nil {
		return 0
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	n := 0
	for _, t := range e.observed {
		n += len(t)
	}
	return n
}
