package locker_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/lockctl/lockctl/internal/testdb"
	"github.com/lockctl/lockctl/locker"
)

// A heartbeat acknowledged while a binding was on its way moved the bound
// lease too (the two serialize on the session's row: the heartbeat either
// saw the binding or the binding read its expiry), so the lease is timed
// from that heartbeat, as the session is: when the session's heartbeats
// then fail until it is lost, its Keepalive ends with time left on the
// lease, not after the lease's local deadline.
func TestLeaseBoundAcrossAHeartbeatIsTimedFromIt(t *testing.T) {
	t.Parallel()
	pool := testdb.New(t)
	lk := sessionLocker(t)
	db := &bindRaceDB{Pool: pool, beat: make(chan struct{}, 1)}
	s, err := lk.OpenSession(context.Background(), db, "worker-1")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close(context.Background()) })
	lease := testdb.MustAcquire(t, lk, pool, "a", "worker-1")
	ka := s.Keepalive(context.Background(), lease)
	late := watchLate(ka)
	waitDone(t, ka.Context(), 3*sessTTL)
	if !errors.Is(context.Cause(ka.Context()), locker.ErrSessionLost) {
		t.Fatalf("keepalive ended with %v; want the session lost", context.Cause(ka.Context()))
	}
	if late.Load() {
		t.Fatal("the keepalive still ran with none of its lease left; want it to end before the lease's local deadline")
	}
}

// bindRaceDB holds a binding back until a heartbeat has been answered
// after it was called, and fails every heartbeat once the binding is
// answered.
type bindRaceDB struct {
	*pgxpool.Pool
	beat      chan struct{}
	failBeats atomic.Bool
}

func (d *bindRaceDB) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	switch {
	case strings.Contains(sql, "distributed_lock_session_bind("):
		for len(d.beat) > 0 {
			<-d.beat
		}
		select {
		case <-d.beat:
		case <-ctx.Done():
		}
		return hookRow{row: d.Pool.QueryRow(ctx, sql, args...), after: func() { d.failBeats.Store(true) }}
	case strings.Contains(sql, "distributed_lock_session_heartbeat("):
		if d.failBeats.Load() {
			return hookRow{err: errors.New("the database went away")}
		}
		return hookRow{row: d.Pool.QueryRow(ctx, sql, args...), after: func() {
			select {
			case d.beat <- struct{}{}:
			default:
			}
		}}
	}
	return d.Pool.QueryRow(ctx, sql, args...)
}

type hookRow struct {
	row   pgx.Row
	err   error
	after func()
}

func (r hookRow) Scan(dest ...any) error {
	if r.err != nil {
		return r.err
	}
	err := r.row.Scan(dest...)
	r.after()
	return err
}
