package bench

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
)

// sample is one series run once, at one concurrency, in one scenario.
type sample struct {
	series, scenario string
	workers          int
	round            int // 0-based; a round's series ran seconds apart (see roundRatios)
	elapsed          time.Duration
	granted, refused int64
	latencies        []time.Duration // of granted cycles
	rtGranted        int64           // statements sent by granted cycles
	rtRefused        int64           // statements sent by refused attempts
	waiting          lockWaits
	walBytes         int64         // WAL the server wrote meanwhile (all of it: the run is its only writer)
	serverCPU        time.Duration // CPU of all server processes meanwhile; 0 if not visible
	clientCPU        time.Duration // CPU of this process meanwhile
	errors           int64
	firstErr         error
	violations       Violations
}

// workerStats is one worker's share of a sample, merged at the end.
type workerStats struct {
	granted, refused     int64
	latencies            []time.Duration
	rtGranted, rtRefused int64
	errors               int64
	firstErr             error
}

// keyChooser picks the key of a worker's next cycle.
type keyChooser func(worker int, rnd *rand.Rand) string

func soloKeys(worker int, _ *rand.Rand) string { return fmt.Sprintf("solo-%d", worker) }

func hotKeys(n int) keyChooser {
	return func(_ int, rnd *rand.Rand) string { return fmt.Sprintf("hot-%d", rnd.IntN(n)) }
}

// errAllFailed stops a run whose series cannot do anything at all (the
// server went away, say): its numbers would mean nothing.
var errAllFailed = errors.New("every cycle failed")

// runSeries runs s with workers goroutines for d and measures it. chk, if
// not nil, is snapshotted so the sample carries only this run's violations.
func runSeries(ctx context.Context, s series, scenario string, workers int, keys keyChooser,
	d time.Duration, probe *serverProbe, chk *checker) (sample, error) {
	var before Violations
	if chk != nil {
		before = chk.violations()
	}
	stats := make([]workerStats, workers)
	var wg sync.WaitGroup
	wal0 := probe.walPosition(ctx)
	server0 := probe.serverCPU(ctx)
	client0, _ := processCPU()
	stopSampling := probe.start(ctx)
	start := time.Now()
	deadline := start.Add(d)
	for w := range workers {
		wg.Go(func() {
			stats[w] = work(ctx, s, w, keys, deadline)
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	waits := stopSampling()
	client1, _ := processCPU()
	server1 := probe.serverCPU(ctx)
	walBytes := probe.walPosition(ctx) - wal0
	if err := ctx.Err(); err != nil {
		return sample{}, err
	}

	out := sample{series: s.name, scenario: scenario, workers: workers, elapsed: elapsed, waiting: waits, walBytes: walBytes,
		clientCPU: client1 - client0}
	if server0 != nil && server1 != nil {
		out.serverCPU = cpuSince(server0, server1)
	}
	for _, st := range stats {
		out.granted += st.granted
		out.refused += st.refused
		out.latencies = append(out.latencies, st.latencies...)
		out.rtGranted += st.rtGranted
		out.rtRefused += st.rtRefused
		out.errors += st.errors
		if out.firstErr == nil {
			out.firstErr = st.firstErr
		}
	}
	if chk != nil {
		after := chk.violations()
		out.violations = Violations{after.Exclusion - before.Exclusion,
			after.TokenOrder - before.TokenOrder, after.LostLease - before.LostLease}
	}
	if out.granted == 0 && out.errors > 0 {
		return out, fmt.Errorf("bench: %s, %d workers, %s: %w: %v", s.name, workers, scenario, errAllFailed, out.firstErr)
	}
	return out, nil
}

func work(ctx context.Context, s series, worker int, keys keyChooser, deadline time.Time) workerStats {
	var st workerStats
	var rt int64
	ctx = withRoundTrips(ctx, &rt)
	rnd := rand.New(rand.NewPCG(uint64(worker), uint64(deadline.UnixNano())))
	st.latencies = make([]time.Duration, 0, 1024)
	for ctx.Err() == nil {
		began := time.Now()
		if !began.Before(deadline) {
			break
		}
		key := keys(worker, rnd)
		rt0 := rt
		granted, err := s.cycle(ctx, worker, key)
		took := time.Since(began)
		switch {
		case err != nil:
			if ctx.Err() != nil {
				return st
			}
			st.errors++
			if st.firstErr == nil {
				st.firstErr = err
			}
		case granted:
			st.granted++
			st.rtGranted += rt - rt0
			st.latencies = append(st.latencies, took)
		default:
			st.refused++
			st.rtRefused += rt - rt0
		}
	}
	return st
}

// lockWaits is how often the run's backends were seen waiting for a
// heavyweight lock (a row or transaction lock: another worker's grant or
// release in progress on the same key).
type lockWaits struct {
	samples int64 // how many times pg_stat_activity was read
	waiting int64 // sum over samples of backends in a Lock wait
	active  int64 // sum over samples of backends running a statement
	// events counts, over samples, the workers' backends seen in each wait
	// event ("Lock:tuple", "IO:WALSync", "CPU" for none): where time goes.
	events map[string]int64
}

// serverProbe watches the server from a connection of its own: it samples
// pg_stat_activity while a series runs (every 20 ms: far less than 1% of a
// core, the same for every series) and reads the WAL position and the
// server processes' CPU time before and after.
type serverProbe struct {
	conn    *pgx.Conn
	appName string
	every   time.Duration
}

// lockWaitSQL reads the state of the workers' backends; a running
// statement without a wait event is on a CPU (or waiting for one).
const lockWaitSQL = `
SELECT coalesce(wait_event_type || ':' || wait_event, 'CPU'), count(*)::bigint
FROM pg_stat_activity WHERE application_name = $1 AND state = 'active'
GROUP BY 1`

// start begins sampling; the returned function stops it and returns the
// counts. A nil probe counts nothing.
func (s *serverProbe) start(ctx context.Context) func() lockWaits {
	if s == nil {
		return func() lockWaits { return lockWaits{} }
	}
	stop := make(chan struct{})
	done := make(chan lockWaits, 1)
	// Queries run to completion even when ctx ends: a statement cancelled
	// midway could leave the connection unusable for the next series.
	qctx := context.WithoutCancel(ctx)
	go func() {
		w := lockWaits{events: map[string]int64{}}
		tick := time.NewTicker(s.every)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				done <- w
				return
			case <-tick.C:
			}
			rows, err := s.conn.Query(qctx, lockWaitSQL, s.appName)
			if err != nil {
				continue
			}
			var event string
			var n int64
			_, err = pgx.ForEachRow(rows, []any{&event, &n}, func() error {
				w.events[event] += n
				w.active += n
				if strings.HasPrefix(event, "Lock:") {
					w.waiting += n
				}
				return nil
			})
			if err == nil {
				w.samples++
			}
		}
	}()
	return func() lockWaits {
		close(stop)
		return <-done
	}
}

const walPositionSQL = `SELECT (pg_current_wal_insert_lsn() - '0/0'::pg_lsn)::bigint`

// walPosition is the server's WAL insert position in bytes (0 without a
// probe or on error).
func (s *serverProbe) walPosition(ctx context.Context) int64 {
	if s == nil {
		return 0
	}
	var pos int64
	if err := s.conn.QueryRow(ctx, walPositionSQL).Scan(&pos); err != nil {
		return 0
	}
	return pos
}

func (s *serverProbe) serverCPU(ctx context.Context) map[int32]time.Duration {
	if s == nil {
		return nil
	}
	return serverCPU(ctx, s.conn)
}
