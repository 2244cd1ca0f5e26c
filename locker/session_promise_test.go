package locker_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/lockctl/lockctl/internal/testdb"
	"github.com/lockctl/lockctl/locker"
)

// promise follows what a Keepalive vouches for while it runs: the latest
// instant its Lease's ValidFor promised, read with its Context still
// running, as a holder that checks both before each write would.
type promise struct {
	mu    sync.Mutex
	until time.Time
	stop  chan struct{}
	done  chan struct{}
}

func watchPromise(t *testing.T, k *locker.Keepalive) *promise {
	p := &promise{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(p.done)
		for {
			now := time.Now()
			left := k.Leases()[0].ValidFor()
			if k.Context().Err() == nil && left > 0 {
				p.mu.Lock()
				if now.Add(left).After(p.until) {
					p.until = now.Add(left)
				}
				p.mu.Unlock()
			}
			select {
			case <-p.stop:
				return
			case <-time.After(time.Millisecond):
			}
		}
	}()
	t.Cleanup(p.end)
	return p
}

// madePromise is a promise already made: until, read once.
func madePromise(until time.Time) *promise {
	p := &promise{until: until, stop: make(chan struct{}), done: make(chan struct{})}
	close(p.done)
	return p
}

// end stops following, once.
func (p *promise) end() {
	select {
	case <-p.done:
	default:
		close(p.stop)
		<-p.done
	}
}

func (p *promise) last() time.Time {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.until
}

// takenAfterPromise waits for key as another owner, in the key's queue,
// for limit: a waiter is granted the key the moment the database would
// give it away. It fails t if the grant's reply arrived before the last
// instant p vouched for: the database gave the key away while its holder
// had been promised it. It returns whether the key was granted.
func takenAfterPromise(t *testing.T, lk *locker.Locker, db locker.DBTX, key string, p *promise, limit time.Duration) bool {
	t.Helper()
	lease, err := testdb.One(lk.Acquire(context.Background(), db, locker.Request{
		Keys: locker.Keys(key), Owner: "thief", Wait: limit,
	}))
	if errors.Is(err, locker.ErrHeld) {
		return false
	}
	if err != nil {
		t.Fatal(err)
	}
	arrived := time.Now()
	p.end()
	if until := p.last(); arrived.Before(until) {
		t.Fatalf("%q granted to another owner (token %d) %s before the last instant its holder's ValidFor vouched for",
			key, lease.Token, until.Sub(arrived).Round(time.Millisecond))
	}
	return true
}

// faultyDB passes every call to the pool, but can lose the reply of the
// next session heartbeat or binding (after it ran, as a connection cut
// between its commit and its answer would), answer a binding only once a
// heartbeat that began after it ran is answered, or once the test lets
// it go, hold heartbeats back
// whatever their context says (a call still out), or cut the process off:
// every later call fails without reaching the database.
type faultyDB struct {
	*pgxpool.Pool
	loseBeatReply, loseBindReply atomic.Bool
	bindAfterBeat                atomic.Bool
	holdBindReply                atomic.Pointer[chan struct{}] // the next binding runs, then its reply waits for this to close
	bindRan                      chan struct{}
	holdBeats                    atomic.Pointer[chan struct{}] // closed to let them go
	cut                          atomic.Bool
	answered                     chan time.Time // when each answered heartbeat began, as long as there is room
}

var errCut = errors.New("the connection was cut")

func (d *faultyDB) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	beat := strings.Contains(sql, "distributed_lock_session_heartbeat(")
	bind := strings.Contains(sql, "distributed_lock_session_bind(")
	switch {
	case d.cut.Load():
		return hookRow{err: errCut}
	case beat && d.holdBeats.Load() != nil:
		<-*d.holdBeats.Load()
		return hookRow{err: errCut}
	case beat && d.loseBeatReply.CompareAndSwap(true, false), bind && d.loseBindReply.CompareAndSwap(true, false):
		return hookRow{err: runDiscarding(ctx, d.Pool, sql, args...)}
	case beat:
		began := time.Now()
		return hookRow{row: d.Pool.QueryRow(ctx, sql, args...), after: func() {
			select {
			case d.answered <- began:
			default:
			}
		}}
	case bind && d.holdBindReply.Load() != nil:
		held := *d.holdBindReply.Swap(nil)
		return hookRow{row: d.Pool.QueryRow(ctx, sql, args...), after: func() {
			close(d.bindRan)
			<-held
		}}
	case bind && d.bindAfterBeat.Load():
		return hookRow{row: d.Pool.QueryRow(ctx, sql, args...), after: func() {
			ran := time.Now()
			for began := range d.answered {
				if began.After(ran) {
					return
				}
			}
		}}
	}
	return d.Pool.QueryRow(ctx, sql, args...)
}

func (d *faultyDB) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	if d.cut.Load() {
		return nil, errCut
	}
	return d.Pool.Query(ctx, sql, args...)
}

// nextBeat waits for the next heartbeat to be answered, and returns when
// it began.
func (d *faultyDB) nextBeat(t *testing.T) time.Time {
	t.Helper()
	for {
		select {
		case <-d.answered:
			continue // one answered before the call
		default:
		}
		break
	}
	select {
	case began := <-d.answered:
		return began
	case <-time.After(2 * sessTTL):
		t.Fatal("no heartbeat was answered")
	}
	return time.Time{}
}

// runDiscarding runs a statement to its end and reports its reply lost.
func runDiscarding(ctx context.Context, pool *pgxpool.Pool, sql string, args ...any) error {
	rows, err := pool.Query(ctx, sql, args...)
	if err != nil {
		return err
	}
	for rows.Next() {
	}
	rows.Close()
	if rows.Err() != nil {
		return rows.Err()
	}
	return errCut
}

// faultyLocker is a session's Locker on the real clock, heartbeating every
// sessEvery, and a pool behind a faultyDB.
func faultyLocker(t *testing.T) (*locker.Locker, *pgxpool.Pool, *faultyDB) {
	pool := testdb.New(t)
	return sessionLocker(t), pool, &faultyDB{Pool: pool, answered: make(chan time.Time, 1), bindRan: make(chan struct{})}
}

func openOn(t *testing.T, lk *locker.Locker, db locker.DBTX, owner string) *locker.Session {
	t.Helper()
	s, err := lk.OpenSession(context.Background(), db, owner)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close(context.Background()) })
	return s
}
