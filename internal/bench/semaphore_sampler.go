package bench

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// The holder sampler asks the server, every holderSampleEvery while a
// series runs, how many leases hold each of its keys, and keeps the most:
// a semaphore key's live slots (distributed_lock_live_holders, the count
// its grants obey), or a mutex key's one lease. A sample is one snapshot
// of committed grants, so it checks what the server granted, not what the
// workers believed; it sees some instants, not all (the workers'
// timelines see every grant: semaphore_report.go). One small read per
// sample, in both series alike, keeps it cheap.

// holderSampleEvery spaces the samples: about a hundred a second.
const holderSampleEvery = 10 * time.Millisecond

// holdersSQL is the most leases any of the keys has now, as the readers'
// view counts them: a running group's live holders, or a key held alone
// while its lease runs.
const holdersSQL = `
SELECT coalesce(max(coalesce(l.holders, (l.state IN ('held', 'expiring'))::int)), 0)
FROM distributed_lock_state l
WHERE l.lock_key = ANY($1)`

// holderSampling is one series' sampler at work.
type holderSampling struct {
	stop    context.CancelFunc
	done    chan struct{}
	peak    int
	samples int
	err     error
}

// startHolderSampling samples keys from the instant from until finish.
func startHolderSampling(ctx context.Context, pool *pgxpool.Pool, keys []string, from time.Time) *holderSampling {
	sctx, stop := context.WithCancel(ctx)
	s := &holderSampling{stop: stop, done: make(chan struct{})}
	go func() {
		defer close(s.done)
		select {
		case <-sctx.Done():
			return
		case <-time.After(time.Until(from)):
		}
		tick := time.NewTicker(holderSampleEvery)
		defer tick.Stop()
		for {
			var n int
			if err := pool.QueryRow(sctx, holdersSQL, keys).Scan(&n); err != nil {
				if sctx.Err() == nil {
					s.err = err
				}
				return
			}
			s.peak, s.samples = max(s.peak, n), s.samples+1
			select {
			case <-sctx.Done():
				return
			case <-tick.C:
			}
		}
	}()
	return s
}

// finish stops the sampler and returns the most holders it saw on one key
// and how many samples it took.
func (s *holderSampling) finish() (peak, samples int, err error) {
	s.stop()
	<-s.done
	if s.err != nil {
		err = fmt.Errorf("sample holders: %w", s.err)
	}
	return s.peak, s.samples, err
}
