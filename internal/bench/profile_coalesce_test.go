package bench

// What batching the concurrent calls of one process would buy: a prototype
// coalescer sends every grant (and every release) that arrives while the
// previous batch is in flight as one statement, so one round trip and one
// commit serve several workers. It grants free rows only (the no-contention
// scenario needs no more), so it is a measure of the lever, not a design:
// BENCHMARKS.md, "The ratio to the reference". Gated:
// LOCKCTL_BENCH_PROFILE=1 go test -run TestCoalescedCycles -v ./internal/bench/

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/lockctl/lockctl/internal/pgtemp"
	"github.com/lockctl/lockctl/locker"
)

// coalescedGrantSQL grants each requested key whose row is free, as
// store's takeSQL does for one key (token drawn under the row lock, SKIP
// LOCKED); keys are locked in key order so batches cannot deadlock.
const coalescedGrantSQL = `
WITH req AS (SELECT * FROM unnest($1::text[], $2::text[]) r(key, owner)),
cur AS MATERIALIZED (
    SELECT l.lock_key FROM distributed_lock l
    WHERE l.lock_key = ANY($1::text[]) AND l.released_at IS NOT NULL
    ORDER BY l.lock_key FOR NO KEY UPDATE SKIP LOCKED)
UPDATE distributed_lock l SET
    owner_id = req.owner, fence_token = nextval('distributed_lock_fence_seq'),
    expires_at = statement_timestamp() + $3::bigint * interval '1 microsecond',
    ttl = $3::bigint * interval '1 microsecond', acquired_at = statement_timestamp(),
    renewed_at = NULL, renew_count = 0, released_at = NULL, grant_kind = 'acquired',
    previous_owner = l.owner_id, previous_token = l.fence_token
FROM cur, req
WHERE l.lock_key = cur.lock_key AND req.key = cur.lock_key
RETURNING l.lock_key, l.fence_token`

// coalescedReleaseSQL is store's lazy release for several leases at once.
const coalescedReleaseSQL = `
UPDATE distributed_lock l SET released_at = clock_timestamp()
FROM unnest($1::text[], $2::text[], $3::bigint[]) r(key, owner, token)
WHERE l.lock_key = r.key AND l.owner_id = r.owner AND l.fence_token = r.token
  AND l.released_at IS NULL AND set_config('synchronous_commit', 'off', true) IS NOT NULL
RETURNING l.lock_key, l.fence_token`

type coalescedCall struct {
	key, owner string
	token      int64 // release: the lease's token
	done       chan coalescedResult
}

type coalescedResult struct {
	token int64 // grant: the new token; 0 when not granted or not released
	err   error
	lead  bool // the caller is to run the next batch
}

// coalescer runs one batch at a time; calls that arrive meanwhile wait and
// go out together in the next, run by the first of them.
type coalescer struct {
	mu      sync.Mutex
	busy    bool
	pending []coalescedCall
	batches int // batches run, and calls they carried
	calls   int
	run     func(ctx context.Context, batch []coalescedCall) (map[string]int64, error)
}

func (c *coalescer) do(ctx context.Context, key, owner string, token int64) (int64, error) {
	call := coalescedCall{key: key, owner: owner, token: token, done: make(chan coalescedResult, 1)}
	c.mu.Lock()
	c.pending = append(c.pending, call)
	lead := !c.busy
	c.busy = true
	c.mu.Unlock()
	for {
		if lead {
			c.mu.Lock()
			batch := c.pending
			c.pending = nil
			c.batches++
			c.calls += len(batch)
			c.mu.Unlock()
			got, err := c.run(ctx, batch)
			for _, b := range batch {
				b.done <- coalescedResult{token: got[b.key], err: err}
			}
			c.mu.Lock()
			if len(c.pending) > 0 {
				c.pending[0].done <- coalescedResult{lead: true}
			} else {
				c.busy = false
			}
			c.mu.Unlock()
		}
		r := <-call.done
		if !r.lead {
			return r.token, r.err
		}
		lead = true
	}
}

// batchColumns are batch's calls as the statements' array parameters.
func batchColumns(batch []coalescedCall) (keys, owners []string, tokens []int64) {
	for _, b := range batch {
		keys, owners, tokens = append(keys, b.key), append(owners, b.owner), append(tokens, b.token)
	}
	return keys, owners, tokens
}

// keyTokens runs a batch statement returning (key, token) rows: the tokens
// granted, or the tokens of the leases released.
func keyTokens(ctx context.Context, pool *pgxpool.Pool, sql string, args ...any) (map[string]int64, error) {
	rows, err := pool.Query(ctx, sql, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	got := map[string]int64{}
	for rows.Next() {
		var key string
		var token int64
		if err := rows.Scan(&key, &token); err != nil {
			return nil, err
		}
		got[key] = token
	}
	return got, rows.Err()
}

// meanBatch is the calls per batch so far.
func (c *coalescer) meanBatch() float64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.batches == 0 {
		return 0
	}
	return float64(c.calls) / float64(c.batches)
}

func coalescedSeries(pool *pgxpool.Pool, ttl time.Duration, chk *checker) (series, *coalescer, *coalescer) {
	grants := &coalescer{run: func(ctx context.Context, batch []coalescedCall) (map[string]int64, error) {
		keys, owners, _ := batchColumns(batch)
		return keyTokens(ctx, pool, coalescedGrantSQL, keys, owners, ttl.Microseconds())
	}}
	releases := &coalescer{run: func(ctx context.Context, batch []coalescedCall) (map[string]int64, error) {
		keys, owners, tokens := batchColumns(batch)
		return keyTokens(ctx, pool, coalescedReleaseSQL, keys, owners, tokens)
	}}
	return series{name: "locker-coalesced", cycle: func(ctx context.Context, worker int, key string) (bool, error) {
		o := owner(worker)
		token, err := grants.do(ctx, key, o, 0)
		if err != nil || token == 0 {
			return false, err
		}
		chk.granted(key, o, token)
		chk.releasing(key, o)
		released, err := releases.do(ctx, key, o, token)
		if err == nil && released == 0 {
			chk.releaseLost()
		}
		return true, err
	}}, grants, releases
}

func TestCoalescedCycles(t *testing.T) {
	profiling(t, "measure batched grants and releases against the locker")
	ctx := context.Background()
	const workers = 8
	tg, conn := profileServer(t, pgtemp.Options{}, workers)
	probe := &serverProbe{conn: conn, appName: tg.appName, every: 20 * time.Millisecond}
	lk, err := locker.New(locker.Config{TTL: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	chk := map[string]*checker{SeriesReference: newChecker(), SeriesLocker: newChecker(), "locker-coalesced": newChecker()}
	coalesced, grants, releases := coalescedSeries(tg.pool, 30*time.Second, chk["locker-coalesced"])
	all := []series{
		referenceSeries(SeriesReference, reference{pool: tg.pool, ttl: 30 * time.Second}, chk[SeriesReference]),
		lockerSeries(SeriesLocker, lk, tg.pool, chk[SeriesLocker]),
		coalesced,
		commitFloorSeries(tg.pool),
	}
	for _, s := range all[:2] { // the locker creates the keys' rows
		if _, err := runSeries(ctx, s, ScenarioSolo, workers, soloKeys, 300*time.Millisecond, nil, chk[s.name]); err != nil {
			t.Fatal(err)
		}
	}
	var samples []sample
	for round := range 5 {
		for _, s := range rotate(all, round) {
			smp, err := runSeries(ctx, s, ScenarioSolo, workers, soloKeys, 2*time.Second, probe, chk[s.name])
			if err != nil {
				t.Fatal(err)
			}
			if smp.errors > 0 && !errors.Is(smp.firstErr, context.DeadlineExceeded) {
				t.Fatalf("%s: %d errors, first: %v", s.name, smp.errors, smp.firstErr)
			}
			smp.round = round
			samples = append(samples, smp)
		}
	}
	for name, c := range chk {
		if v := c.violations(); !v.Zero() {
			t.Errorf("%s broke the lock rules: %+v", name, v)
		}
	}
	for _, r := range aggregate(samples, Options{}) {
		t.Logf("%-17s %6.0f cycles/s (%5.0f–%5.0f)  p50 %s  CPU %s  %v", r.Series, r.CyclesPerSec,
			r.CyclesPerSecMin, r.CyclesPerSecMax, ms(r.P50), cpuPair(r), r.TopWaits(3))
	}
	t.Logf("calls per batch: grants %.2f, releases %.2f", grants.meanBatch(), releases.meanBatch())
	for _, num := range []string{SeriesLocker, "locker-coalesced"} {
		t.Logf("%s ÷ reference by round: %.2f", num, roundRatios(samples, ScenarioSolo, workers, num, SeriesReference))
	}
}
