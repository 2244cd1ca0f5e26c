package demo_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/lockctl/lockctl/internal/demo"
	"github.com/lockctl/lockctl/internal/lockview"
	"github.com/lockctl/lockctl/internal/testdb"
)

const (
	reportPool    = "reports:pool"
	reportPermits = 3
	pricing       = "config:pricing"
	// The pricing writer's first grant, and the largest token granted to a
	// pricing reader before it.
	writerGrantSQL = `SELECT event_id, fence_token FROM distributed_lock_event
		WHERE lock_key = 'config:pricing' AND kind IN ('acquired', 'stolen') AND owner_id = 'pricing-admin'
		ORDER BY event_id LIMIT 1`
	readersBeforeSQL = `SELECT count(*), coalesce(max(fence_token), 0) FROM distributed_lock_event
		WHERE lock_key = 'config:pricing' AND kind IN ('acquired', 'stolen') AND owner_id LIKE 'pricing-api-%'
		AND event_id < $1`
	// Grants of a report worker's permit that the event log does not
	// record as one of reportPermits permits.
	oddPermitSQL = `SELECT count(*) FROM distributed_lock_event
		WHERE lock_key = 'reports:pool' AND kind IN ('acquired', 'stolen')
		AND (detail->>'mode' IS DISTINCT FROM 'semaphore' OR (detail->>'permits')::int IS DISTINCT FROM 3)`
)

// TestSharedScenes: the report workers contend for the three permits of
// reports:pool, which, read all through the run as the console reads its
// holders, never has more than three and is often full; the pricing readers
// hold config:pricing side by side, and the writer, queued for it
// exclusively, is eventually granted it with a larger token than every
// reader before it, and writes the price list.
func TestSharedScenes(t *testing.T) {
	ctx := context.Background()
	pool := testdb.New(t)
	sim, err := demo.Start(ctx, pool, demo.Config{Workers: 2, HotKeys: 1, Speed: 4, Seed: 42})
	if err != nil {
		t.Fatal(err)
	}
	stopped := false
	t.Cleanup(func() {
		if !stopped {
			sim.Stop()
		}
	})
	permits := watchHolders(t, pool, reportPool)

	testdb.Eventually(t, 30*time.Second, "two pricing readers holding config:pricing at once", func() bool {
		readers := 0
		for _, h := range holdersOf(t, pool, pricing) {
			if strings.HasPrefix(h.Owner, "pricing-api-") {
				readers++
			}
		}
		return readers >= 2
	})
	var writerEvent, writerToken int64
	testdb.Eventually(t, 30*time.Second, "pricing-admin granted config:pricing", func() bool {
		err := pool.QueryRow(ctx, writerGrantSQL).Scan(&writerEvent, &writerToken)
		if err != nil && !errors.Is(err, pgx.ErrNoRows) {
			t.Fatal(err)
		}
		return err == nil
	})
	var readers, readerToken int64
	if err := pool.QueryRow(ctx, readersBeforeSQL, writerEvent).Scan(&readers, &readerToken); err != nil {
		t.Fatal(err)
	}
	if readers == 0 || writerToken <= readerToken {
		t.Errorf("pricing-admin was granted token %d after %d reader grants up to token %d; want readers first, and a larger token",
			writerToken, readers, readerToken)
	}
	testdb.Eventually(t, 30*time.Second, "a price update written", func() bool { return sim.Stats().PriceUpdates > 0 })
	testdb.Eventually(t, 30*time.Second, "every permit of reports:pool held at once", func() bool {
		return permits.seen().full > 0
	})

	sim.Stop()
	stopped = true
	seen := permits.stop()
	t.Logf("%d samples of %s: at most %d holders, all %d permits held in %d", seen.n, reportPool, seen.most, reportPermits, seen.full)
	if seen.most > reportPermits {
		t.Errorf("%s had %d holders at once: %s; want at most its %d permits", reportPool, seen.most, seen.over, reportPermits)
	}
	if n := count(t, pool, oddPermitSQL); n != 0 {
		t.Errorf("%d grants of %s were not of a semaphore of %d permits", n, reportPool, reportPermits)
	}
	for _, key := range []string{reportPool, pricing} {
		if hs := holdersOf(t, pool, key); len(hs) != 0 {
			t.Errorf("after Stop, %s still has holders %v", key, hs)
		}
	}
	if st := sim.Stats(); st.Errors != 0 {
		t.Errorf("the cast hit %d database errors", st.Errors)
	}
}

func holdersOf(t *testing.T, pool *pgxpool.Pool, key string) []lockview.Holder {
	t.Helper()
	hs, err := lockview.HoldersOf(context.Background(), pool, []string{key})
	if err != nil {
		t.Fatal(err)
	}
	return hs[key]
}

// holderWatch reads a key's holders again and again, as the console reads
// them, until stopped.
type holderWatch struct {
	mu   sync.Mutex
	s    holderSamples
	done chan struct{}
	wg   sync.WaitGroup
}

type holderSamples struct {
	n, most, full int
	over          string // the first sample with more holders than permits
}

func watchHolders(t *testing.T, pool *pgxpool.Pool, key string) *holderWatch {
	w := &holderWatch{done: make(chan struct{})}
	w.wg.Go(func() {
		for {
			select {
			case <-w.done:
				return
			case <-time.After(2 * time.Millisecond):
			}
			hs, err := lockview.HoldersOf(context.Background(), pool, []string{key})
			if err != nil {
				t.Errorf("holders of %s: %v", key, err)
				return
			}
			w.mu.Lock()
			w.s.n++
			w.s.most = max(w.s.most, len(hs[key]))
			if len(hs[key]) == reportPermits {
				w.s.full++
			}
			if len(hs[key]) > reportPermits && w.s.over == "" {
				for _, h := range hs[key] {
					w.s.over += h.Owner + " "
				}
			}
			w.mu.Unlock()
		}
	})
	t.Cleanup(func() { w.stop() })
	return w
}

func (w *holderWatch) seen() holderSamples {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.s
}

// stop ends the watch (once) and returns what it saw.
func (w *holderWatch) stop() holderSamples {
	select {
	case <-w.done:
	default:
		close(w.done)
	}
	w.wg.Wait()
	return w.seen()
}
