package demo

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/lockctl/lockctl/internal/lockdb"
	"github.com/lockctl/lockctl/locker"
)

// Sim is a running simulation. Its counters are safe to read at any time.
type Sim struct {
	cfg    Config
	pool   *pgxpool.Pool
	notify *locker.Notifier
	cancel context.CancelFunc
	wg     sync.WaitGroup
	stop   sync.Once

	stats   counters
	holding leases

	lastDeadlock atomic.Pointer[Deadlock]
}

// Stats is what the cast has done so far.
type Stats struct {
	Acquired      int64 // grants of a free key (including hand-offs)
	Stolen        int64 // grants of another owner's expired lease
	HandOffs      int64 // grants to a worker that had found the key held and waited
	Released      int64
	Crashes       int64 // holders that stopped renewing without releasing
	Freezes       int64 // ledger writers that froze past their TTL
	WritesOK      int64 // fenced writes that committed
	WritesRefused int64 // fenced writes refused: stale token or lost lease
	OperatorFreed int64 // times the stuck report was taken after an operator freed it
	Transfers     int64 // transfers that moved money under both accounts' keys
	Deadlocks     int64 // waits refused with locker.ErrDeadlock
	PriceUpdates  int64 // price lists the pricing writer wrote under config:pricing, its readers kept out
	Errors        int64 // database errors the cast backed off from
	LastError     string
}

type counters struct {
	acquired, stolen, handOffs, released, crashes, freezes atomic.Int64
	writesOK, writesRefused, operatorFreed, errors         atomic.Int64
	transfers, deadlocks, priceUpdates                     atomic.Int64
	lastError                                              atomic.Pointer[string]
}

// hitError counts a database error the cast backs off from and keeps its
// text, so a run that hit one can say which.
func (c *counters) hitError(err error) {
	text := err.Error()
	c.lastError.Store(&text)
	c.errors.Add(1)
}

// Start migrates nothing and creates nothing but the demo_resource and
// demo_account tables:
// pool must already hold lockctl's schema (locker.Migrate). The cast runs
// until ctx ends or Stop is called.
func Start(ctx context.Context, pool *pgxpool.Pool, cfg Config) (*Sim, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	if err := createResource(ctx, pool); err != nil {
		return nil, err
	}
	if err := createAccounts(ctx, pool); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	s := &Sim{
		cfg:     cfg,
		pool:    pool,
		notify:  locker.NewNotifier(locker.NotifierConfig{Connect: lockdb.ConnectWith(pool.Config().ConnConfig)}),
		cancel:  cancel,
		holding: leases{m: map[string]locker.Lease{}},
	}
	s.wg.Go(func() { _ = s.notify.Run(ctx) })
	for _, scene := range s.cast() {
		s.wg.Go(func() { scene(ctx) })
	}
	return s, nil
}

// Stop ends every worker, waits for them to exit, then releases every lease
// they still hold — including those of crashed and frozen workers, so an
// existing database is left with no lease held by the demo. Safe to call
// more than once.
func (s *Sim) Stop() {
	s.stop.Do(func() {
		s.cancel()
		s.wg.Wait()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		lk, err := locker.New(locker.Config{LogGrants: true})
		if err != nil {
			return
		}
		for _, lease := range s.holding.drain() {
			_, _ = lk.Release(ctx, s.pool, lease)
		}
	})
}

// Seed is the seed in use (the one Config gave, or the one picked for 0).
func (s *Sim) Seed() uint64 { return s.cfg.Seed }

// Stats returns the counters now.
func (s *Sim) Stats() Stats {
	c := &s.stats
	return Stats{
		Acquired: c.acquired.Load(), Stolen: c.stolen.Load(), HandOffs: c.handOffs.Load(),
		Released: c.released.Load(), Crashes: c.crashes.Load(), Freezes: c.freezes.Load(),
		WritesOK: c.writesOK.Load(), WritesRefused: c.writesRefused.Load(),
		OperatorFreed: c.operatorFreed.Load(), Transfers: c.transfers.Load(), Deadlocks: c.deadlocks.Load(),
		PriceUpdates: c.priceUpdates.Load(), Errors: c.errors.Load(), LastError: lastError(c),
	}
}

func lastError(c *counters) string {
	if text := c.lastError.Load(); text != nil {
		return *text
	}
	return ""
}

// Status is the console's extra header line: cheap (atomic reads only) and
// safe to call from any goroutine. It fits 120 columns with room to spare;
// hand-offs, which it leaves out, are on the console's own rates line.
func (s *Sim) Status() string {
	st := s.Stats()
	line := fmt.Sprintf("seed %d · fenced writes %d ok, %d refused · steals %d · crashes %d · operator frees %d · transfers %d · deadlocks %d",
		s.cfg.Seed, st.WritesOK, st.WritesRefused, st.Stolen, st.Crashes, st.OperatorFreed, st.Transfers, st.Deadlocks)
	if st.Errors > 0 {
		line += fmt.Sprintf(" · db errors %d", st.Errors)
	}
	return line
}

// Deadlock is a wait of the cast refused with locker.ErrDeadlock.
type Deadlock struct {
	Owner string        // the owner whose wait closed the cycle
	Key   string        // the key it asked for
	After time.Duration // from its Acquire call to the refusal
	Err   error         // the *locker.Error, naming the cycle
}

// LastDeadlock is the latest wait refused with ErrDeadlock; false before
// the first.
func (s *Sim) LastDeadlock() (Deadlock, bool) {
	if d := s.lastDeadlock.Load(); d != nil {
		return *d, true
	}
	return Deadlock{}, false
}

// deadlocked logs a wait of sy refused with ErrDeadlock after took.
func (s *Sim) deadlocked(sy syncer, err error, took time.Duration) {
	s.lastDeadlock.Store(&Deadlock{Owner: sy.owner, Key: sy.other, After: took, Err: err})
	s.stats.deadlocks.Add(1)
}

// leases tracks what the cast holds, so Stop can give it all back.
type leases struct {
	mu sync.Mutex
	m  map[string]locker.Lease // by owner id
}

func (l *leases) hold(lease locker.Lease) {
	l.mu.Lock()
	l.m[lease.Owner+"\x00"+lease.Key] = lease
	l.mu.Unlock()
}

func (l *leases) drop(lease locker.Lease) {
	l.mu.Lock()
	if cur, ok := l.m[lease.Owner+"\x00"+lease.Key]; ok && cur.Token == lease.Token {
		delete(l.m, lease.Owner+"\x00"+lease.Key)
	}
	l.mu.Unlock()
}

func (l *leases) drain() []locker.Lease {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]locker.Lease, 0, len(l.m))
	for _, lease := range l.m {
		out = append(out, lease)
	}
	l.m = map[string]locker.Lease{}
	return out
}
