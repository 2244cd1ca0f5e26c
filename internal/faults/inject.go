package faults

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/lockctl/lockctl/internal/history"
	"github.com/lockctl/lockctl/internal/pgtemp"
)

// Fault kinds, as counted in the summary.
const (
	KillAcquire      = "kill_mid_acquire"
	KillRenew        = "kill_mid_renew"
	KillWrite        = "kill_mid_fenced_write"
	RestartFast      = "restart_fast"
	RestartCrash     = "restart_immediate"
	SlowStatement    = "slow_statement"
	StatementTimeout = "statement_timeout"
	Zombie           = "zombie_freeze"
	// Promote crashes the primary and promotes its synchronous standby
	// (Config.Failover), once per run.
	Promote = "promote_sync_standby"
)

// AllKinds is every fault the injector knows.
var AllKinds = []string{KillAcquire, KillRenew, KillWrite, RestartFast, RestartCrash,
	SlowStatement, StatementTimeout, Zombie, DeadWaiter, RestartHandOff,
	KillSession, KillHeartbeat}

// weight of each kind after the first round; restarts are rarer because
// every lease is lost in one.
var weight = map[string]int{KillAcquire: 3, KillRenew: 3, KillWrite: 3, RestartFast: 1,
	RestartCrash: 1, SlowStatement: 3, StatementTimeout: 2, Zombie: 3, DeadWaiter: 3, RestartHandOff: 1,
	KillSession: 6, KillHeartbeat: 2}

// once are the kinds the injector makes only in its first round.
var once = map[string]bool{Promote: true}

type injector struct {
	firstDone chan struct{}    // closed when the first round has tried every kind
	inst      *pgtemp.Instance // the primary: restarts act on it
	standby   *pgtemp.Instance // synchronous standby, until Promote
	admin     *pgxpool.Pool
	rng       *rand.Rand
	counts    *counts
	workers   []*worker
	// sessions are the session workers, whose processes KillSession kills.
	sessions []*sessionWorker
	hot      []string
	ttl      time.Duration
	kinds    []string
	logf     func(string, ...any)
	rec      *history.Recorder // where crashes and the dead waiters' grant attempts are recorded, for the checker
	deadSeq  int               // numbers the dead waiters' owners and the staged hand-offs' keys
	// deadWaiters counts DeadWaiter faults, which alternate a single key's
	// waiter and a set's.
	deadWaiters int
	// rowKeys are the keys whose row a slow statement holds (rowKeys).
	rowKeys []string
}

// run injects faults until ctx ends: first every kind once (the slowest to
// play out first, the rest in a seeded order; each retried until it finds
// a target),
// then at random.
func (in *injector) run(ctx context.Context) {
	first := append([]string(nil), in.kinds...)
	in.rng.Shuffle(len(first), func(i, j int) { first[i], first[j] = first[j], first[i] })
	// Then to the front, in this order, the kinds that take longest to
	// play out, so that even a short run on a loaded machine sees them
	// through: the zombie takes 2–3 TTLs to resume and try its write; the
	// promotion happens once, in the first round; a single key's dead
	// waiter must reach the head of its queue, be handed the key and let
	// it lapse before anyone takes it over (claim_window_ran_out); a
	// killed session's leases lapse with it, a TTL later, and only then
	// can another worker take them over.
	front := 0
	for _, k := range []string{Zombie, Promote, DeadWaiter, KillSession} {
		if j := slices.Index(first, k); j >= 0 {
			first = slices.Insert(slices.Delete(first, j, j+1), front, k)
			front++
		}
	}
	in.firstRound(ctx, first)
	close(in.firstDone)
	var again []string
	total := 0
	for _, k := range in.kinds {
		if !once[k] {
			again = append(again, k)
			total += weight[k]
		}
	}
	for ctx.Err() == nil && total > 0 {
		n := in.rng.IntN(total)
		kind := again[0]
		for _, k := range again {
			if n < weight[k] {
				kind = k
				break
			}
			n -= weight[k]
		}
		in.inject(ctx, kind)
		in.pause(ctx)
	}
}

// firstRound injects every kind once, in order, a quarter TTL apart. A
// kind that finds no target within two TTLs (nobody holds a key yet, no
// statement to catch in the act) waits for another pass, up to three, so
// that it does not hold up the kinds after it: on a loaded machine, where
// each restart takes seconds, the round may otherwise not reach them
// before the run ends.
func (in *injector) firstRound(ctx context.Context, kinds []string) {
	start := time.Now()
	pending := kinds
	for pass := 0; pass < 3 && len(pending) > 0 && ctx.Err() == nil; pass++ {
		var missed []string
		for _, kind := range pending {
			if ctx.Err() != nil {
				missed = append(missed, kind)
				continue
			}
			tried, injected := time.Now(), false
			for try := 0; try < 20 && time.Since(tried) < 2*in.ttl && ctx.Err() == nil && !injected; try++ {
				if injected = in.inject(ctx, kind); !injected {
					sleepCtx(ctx, in.ttl/10) // e.g. nobody holds a key yet
				}
			}
			if !injected {
				missed = append(missed, kind)
			}
			sleepCtx(ctx, in.ttl/4)
		}
		pending = missed
	}
	if len(pending) > 0 {
		in.logf("faults %v: no chance to inject them in the first round (%s)", pending, time.Since(start).Round(time.Millisecond))
	} else {
		in.logf("first round: %d kinds in %s", len(kinds), time.Since(start).Round(time.Millisecond))
	}
}

func (in *injector) pause(ctx context.Context) {
	sleepCtx(ctx, in.ttl/4+time.Duration(in.rng.Int64N(int64(in.ttl/2))))
}

// inject tries one fault and counts it if it happened.
func (in *injector) inject(ctx context.Context, kind string) bool {
	var ok bool
	var err error
	// target is the key the fault aimed at, when it picked one.
	var target string
	switch kind {
	case KillAcquire:
		// A grant never waits for a row lock (it skips a locked row), so
		// the event table is what holds it: the grant statement of
		// distributed_lock_acquire (a first grant or a steal) locks every
		// table it uses when it starts. pg_stat_activity shows the client's
		// call of the function, or of distributed_lock_acquire_all for a
		// set (whose grants are then cut off mid-set).
		ok, err = in.killWhile(ctx, in.holdEvents, "faults-acq-%", []string{"active"}, "%distributed_lock_acquire%(%")
	case KillRenew:
		key, _ := in.heldKey()
		if key == "" {
			return false
		}
		target = key
		ok, err = in.killWhile(ctx, in.rowHolder(key), "faults-ka-%", []string{"active"}, "%distributed_lock_renew(%")
	case KillWrite:
		ok, err = in.killWhile(ctx, nil, "faults-write-%", []string{"active", "idle in transaction"}, "%")
	case RestartFast, RestartCrash:
		mode := pgtemp.Fast
		if kind == RestartCrash {
			mode = pgtemp.Immediate
		}
		// A restart runs to the end even if the run ends meanwhile: the
		// checker needs the server back.
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
		if kind == RestartCrash {
			// Caught mid-heartbeat when a session keeps leases (sessions.go),
			// else wherever the workers are.
			var caught bool
			if caught, err = in.restartMidHeartbeat(ctx); caught {
				in.counts.Observe("restart_mid_heartbeat")
			} else if err == nil {
				err = in.crashRestart(rctx)
			}
		} else {
			err = in.inst.Restart(rctx, mode)
		}
		cancel()
		ok = err == nil
	case SlowStatement:
		key := in.rowKeys[in.rng.IntN(len(in.rowKeys))]
		target = key
		hold := time.Duration(float64(in.ttl) * (0.3 + 0.9*in.rng.Float64()))
		err = in.holdRow(ctx, key, hold)
		ok = err == nil
	case StatementTimeout:
		key, w := in.heldKey()
		if key == "" {
			return false
		}
		target = key
		w.timeoutMs.Store(max(1, int64(in.ttl/time.Millisecond)/20))
		err = in.holdRow(ctx, key, in.ttl/3)
		w.timeoutMs.Store(0)
		ok = err == nil
	case DeadWaiter:
		ok, err = in.deadWaiter(ctx)
	case RestartHandOff:
		ok, err = in.restartMidHandOff(ctx)
	case Promote:
		ok, err = in.promote(ctx)
	case KillSession:
		ok = in.killSession(ctx)
	case KillHeartbeat:
		ok, err = in.killHeartbeat(ctx)
	case Zombie:
		key, w := in.heldKey()
		if w == nil {
			return false
		}
		target = key
		w.freezeReq.Store(int64(in.ttl*2 + time.Duration(in.rng.Int64N(int64(in.ttl)))))
		ok = true
	}
	if ok {
		in.counts.Fault(kind)
		if target == SharedKey || target == SemaphoreKey {
			// The summary shows that faults reach the holders of the
			// mode keys too.
			in.counts.Observe(kind + "_at_mode_key")
		}
	} else if err != nil && ctx.Err() == nil {
		in.logf("fault %s not injected: %v", kind, err)
	}
	return ok
}

// crashRestart restarts the server without a shutdown checkpoint and
// records the crash for the checker, spanning the restart call: the
// server dies somewhere inside it, so a lazy commit acknowledged before
// the call returned may be lost with it.
func (in *injector) crashRestart(ctx context.Context) error {
	crash := history.Op{Kind: history.Crash, Call: in.rec.Now()}
	err := in.inst.Restart(ctx, pgtemp.Immediate)
	crash.Return = in.rec.Now()
	in.rec.Add(crash)
	return err
}

// heldKey picks (seeded) a worker that holds a key now.
func (in *injector) heldKey() (string, *worker) {
	var holders []*worker
	var keys []string
	for _, w := range in.workers {
		if k := w.holding.Load(); k != nil {
			holders = append(holders, w)
			keys = append(keys, *k)
		}
	}
	if len(holders) == 0 {
		return "", nil
	}
	i := in.rng.IntN(len(holders))
	return keys[i], holders[i]
}

// heldHotKey is a hot key some worker holds right now, or "".
func (in *injector) heldHotKey() string {
	var keys []string
	for _, w := range in.workers {
		if k := w.holding.Load(); k != nil && slices.Contains(in.hot, *k) {
			keys = append(keys, *k)
		}
	}
	if len(keys) == 0 {
		return ""
	}
	return keys[in.rng.IntN(len(keys))]
}

// holdRowSQL is the competing transaction of a slow statement: it locks the
// lock row, so grants, renewals and fences of the key wait behind it.
const (
	lockRowSQL = `SELECT 1 FROM distributed_lock WHERE lock_key = $1 FOR UPDATE`
	sleepSQL   = `SELECT pg_sleep($1::float8)`
)

func (in *injector) holdRow(ctx context.Context, key string, d time.Duration) error {
	return in.hold(ctx, d, lockRowSQL, key)
}

// hold runs lockSQL in a transaction and keeps it open for d.
func (in *injector) hold(ctx context.Context, d time.Duration, lockSQL string, args ...any) error {
	return in.holdThen(ctx, d, nil, lockSQL, args...)
}

// holdThen is hold that closes locked (unless nil) once lockSQL has run:
// what it locks is held from then on.
func (in *injector) holdThen(ctx context.Context, d time.Duration, locked chan<- struct{}, lockSQL string, args ...any) error {
	return pgx.BeginFunc(ctx, in.admin, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, lockSQL, args...); err != nil {
			return err
		}
		if locked != nil {
			close(locked)
		}
		_, err := tx.Exec(ctx, sleepSQL, d.Seconds())
		return err
	})
}

// rowHolder holds key's row locked for up to a second.
func (in *injector) rowHolder(key string) func(context.Context) error {
	return func(ctx context.Context) error { return in.holdRow(ctx, key, 900*time.Millisecond) }
}

// lockEventsSQL blocks writers of the event table, and so the grant
// statement of every first grant or steal (which names the table whether or
// not it logs).
const lockEventsSQL = `LOCK TABLE distributed_lock_event IN SHARE MODE`

// holdEvents holds the event table for up to a second.
func (in *injector) holdEvents(ctx context.Context) error {
	return in.hold(ctx, 900*time.Millisecond, lockEventsSQL)
}

const findBackendsSQL = `
SELECT pid FROM pg_stat_activity
WHERE application_name LIKE $1 AND state = ANY($2) AND query LIKE $3 AND pid <> pg_backend_pid()
ORDER BY pid`

const terminateSQL = `SELECT pg_terminate_backend($1)`

// killWhile terminates one backend matching app/states/query, looking for
// up to a second; if hold is set, it runs meanwhile to hold something the
// statements wait for (so they can be caught in the act).
func (in *injector) killWhile(ctx context.Context, hold func(context.Context) error, app string, states []string, query string) (bool, error) {
	wctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	holdDone := make(chan struct{})
	if hold != nil {
		go func() {
			defer close(holdDone)
			_ = hold(wctx)
		}()
	} else {
		close(holdDone)
	}
	defer func() { cancel(); <-holdDone }()
	for wctx.Err() == nil {
		rows, err := in.admin.Query(wctx, findBackendsSQL, app, states, query)
		var pids []int32
		if err == nil {
			pids, err = pgx.CollectRows(rows, pgx.RowTo[int32])
		}
		if err != nil {
			if wctx.Err() != nil {
				break
			}
			return false, fmt.Errorf("find backends: %w", err)
		}
		if len(pids) > 0 {
			var killed bool
			pid := pids[in.rng.IntN(len(pids))]
			if err := in.admin.QueryRow(ctx, terminateSQL, pid).Scan(&killed); err != nil {
				return false, fmt.Errorf("terminate %d: %w", pid, err)
			}
			if killed {
				return true, nil
			}
		}
		sleepCtx(wctx, 2*time.Millisecond)
	}
	return false, nil
}

// promote crashes the primary (immediate stop: what its synchronous standby
// has not confirmed is lost with it) and promotes the standby. The workers'
// pools and the notifier use a multi-host DSN, so their next connections
// reach the promoted server; the old primary stays down, and later restarts
// act on the new one.
func (in *injector) promote(ctx context.Context) (bool, error) {
	if in.standby == nil {
		return false, nil
	}
	if err := in.inst.Crash(); err != nil {
		return false, err
	}
	pctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
	defer cancel()
	if err := in.standby.Promote(pctx); err != nil {
		return false, err
	}
	in.inst, in.standby = in.standby, nil
	return true, nil
}
