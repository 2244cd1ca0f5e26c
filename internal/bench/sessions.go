package bench

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"runtime"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/lockctl/lockctl/locker"
	"github.com/lockctl/lockctl/store"
)

// The sessions scenario: the cost of keeping many leases alive, with one
// Keepalive per lease (a renewal statement each per interval) beside one
// Session keeping them all (one heartbeat statement per interval), in the
// same run: statements the client sent per second, the client's CPU and
// the server's.

// Series of the sessions scenario.
const (
	KeepPerLease = "one keepalive per lease"
	KeepSession  = "one session"
)

// SessionsOptions configure RunSessions. The zero value runs the default.
type SessionsOptions struct {
	// Leases are the numbers of leases kept, each measured with both
	// series. Defaults to [100, 10000].
	Leases []int
	// TTL of the leases and the session; renewals and heartbeats go every
	// third of it. Defaults to 30s.
	TTL time.Duration
	// For is how long each series is measured once its leases are kept.
	// Defaults to 30s.
	For time.Duration
	// Progress receives one line per finished series; nil: silent.
	Progress io.Writer
}

func (o SessionsOptions) withDefaults() (SessionsOptions, error) {
	if len(o.Leases) == 0 {
		o.Leases = []int{100, 10000}
	}
	o.TTL = cmp.Or(o.TTL, 30*time.Second)
	o.For = cmp.Or(o.For, 30*time.Second)
	if o.Progress == nil {
		o.Progress = io.Discard
	}
	for _, n := range o.Leases {
		if n < 1 || n > 100_000 {
			return o, optionErrorf("leases must be between 1 and 100000, got %d", n)
		}
	}
	if o.TTL < 30*time.Millisecond || o.For < o.TTL/3 {
		return o, optionErrorf("the TTL must be at least 30ms and the measurement at least a third of it")
	}
	return o, nil
}

// KeepResult is one series' cost of keeping Leases alive over Measured.
type KeepResult struct {
	Series     string        `json:"series"`
	Leases     int           `json:"leases"`
	Measured   time.Duration `json:"measured_ns"`
	Statements int64         `json:"statements"` // statements the client sent meanwhile
	PerSecond  float64       `json:"statements_per_sec"`
	ClientCPU  float64       `json:"client_cpu_percent"`           // of one core: this process (getrusage)
	ServerCPU  float64       `json:"server_cpu_percent,omitempty"` // of one core: every server process; 0 when not visible
	Lost       int           `json:"lost"`                         // leases that were not kept (should be 0)
}

// statementCounter counts every statement a pool's connections send.
type statementCounter struct{ n *atomic.Int64 }

func (c statementCounter) TraceQueryStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryStartData) context.Context {
	c.n.Add(1)
	return ctx
}

func (statementCounter) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

// RunSessions measures both series at every lease count on dsn's server.
func RunSessions(ctx context.Context, dsn string, opts SessionsOptions) (*SessionsReport, error) {
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	rep := &SessionsReport{Started: time.Now(), NumCPU: runtime.NumCPU(), TTL: opts.TTL, For: opts.For, LoadBefore: loadAverage()}
	t, err := openTarget(ctx, dsn, 1)
	if err != nil {
		return nil, err
	}
	defer t.close(ctx)
	if rep.Server, err = t.serverInfo(ctx); err != nil {
		return nil, err
	}
	probe, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return nil, fmt.Errorf("bench: connect probe: %w", store.Interpret(err))
	}
	defer probe.Close(context.WithoutCancel(ctx))
	for _, n := range opts.Leases {
		for _, series := range []string{KeepPerLease, KeepSession} {
			res, err := measureKeep(ctx, t, probe, series, n, opts)
			if err != nil {
				return nil, err
			}
			fmt.Fprintf(opts.Progress, "%s, %d leases: %.2f statements/s, client CPU %.2f%%, server CPU %.2f%%\n",
				series, n, res.PerSecond, res.ClientCPU, res.ServerCPU)
			rep.Results = append(rep.Results, res)
		}
	}
	rep.Took, rep.LoadAfter = time.Since(rep.Started), loadAverage()
	return rep, nil
}

// measureKeep takes n leases, keeps them with series, and measures one
// window of opts.For once the first renewal interval has passed.
func measureKeep(ctx context.Context, t *target, probe *pgx.Conn, series string, n int, opts SessionsOptions) (KeepResult, error) {
	res := KeepResult{Series: series, Leases: n}
	var sent atomic.Int64
	pool, err := t.openPoolTraced(ctx, 4, statementCounter{n: &sent})
	if err != nil {
		return res, err
	}
	defer pool.Close()
	lk, err := locker.New(locker.Config{TTL: opts.TTL})
	if err != nil {
		return res, err
	}
	owner := fmt.Sprintf("bench-keep-%d", time.Now().UnixNano())
	leases := make([]locker.Lease, n)
	for i := range n {
		if leases[i], err = tryKey(ctx, lk, pool, fmt.Sprintf("keep-%06d", i), owner); err != nil {
			return res, fmt.Errorf("bench: sessions: %w", err)
		}
	}
	kas, stop, err := keep(ctx, lk, pool, series, owner, leases)
	if err != nil {
		return res, err
	}
	defer stop()
	// Past the binding (or the first renewals' stagger), into the steady state.
	time.Sleep(opts.TTL / 3)
	runtime.GC()
	cpu0, err := processCPU()
	if err != nil {
		return res, err
	}
	server0 := serverCPU(ctx, probe)
	sent0, began := sent.Load(), time.Now()
	select {
	case <-ctx.Done():
		return res, ctx.Err()
	case <-time.After(opts.For):
	}
	res.Measured = time.Since(began)
	res.Statements = sent.Load() - sent0
	cpu1, err := processCPU()
	if err != nil {
		return res, err
	}
	if server0 != nil {
		if server1 := serverCPU(ctx, probe); server1 != nil {
			res.ServerCPU = 100 * cpuSince(server0, server1).Seconds() / res.Measured.Seconds()
		}
	}
	res.PerSecond = float64(res.Statements) / res.Measured.Seconds()
	res.ClientCPU = 100 * (cpu1 - cpu0).Seconds() / res.Measured.Seconds()
	for _, k := range kas {
		if context.Cause(k.Context()) != nil {
			res.Lost += len(k.Leases())
		}
	}
	return res, nil
}

// keep starts keeping leases as series does; stop stops and releases.
func keep(ctx context.Context, lk *locker.Locker, pool *pgxpool.Pool, series, owner string, leases []locker.Lease) ([]*locker.Keepalive, func(), error) {
	var kas []*locker.Keepalive
	var session *locker.Session
	stop := func() {
		bg := context.WithoutCancel(ctx)
		if session != nil {
			// Close releases every lease the session keeps and ends its
			// Keepalives (a Keepalive stopped first would be unbound, and
			// its lease left held).
			_ = session.Close(bg)
			return
		}
		for _, k := range kas {
			k.Stop()
			_, _ = lk.Release(bg, pool, k.Leases()[0])
		}
	}
	if series == KeepPerLease {
		for _, lease := range leases {
			kas = append(kas, lk.Keepalive(ctx, pool, lease))
		}
		return kas, stop, nil
	}
	session, err := lk.OpenSession(ctx, pool, owner)
	if err != nil {
		return nil, nil, fmt.Errorf("bench: sessions: %w", err)
	}
	for start := 0; start < len(leases); start += locker.MaxKeys {
		kas = append(kas, session.Keepalive(ctx, leases[start:min(start+locker.MaxKeys, len(leases))]...))
	}
	return kas, stop, nil
}
