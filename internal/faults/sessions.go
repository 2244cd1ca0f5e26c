package faults

import (
	"context"
	"time"

	"github.com/lockctl/lockctl/internal/history"
)

// Faults of sessions (sessionWorker): the process dies, or its heartbeat
// does.
const (
	// KillSession kills a session worker's process while its session keeps
	// leases, as SIGKILL would (procDB): no release, no close, no further
	// heartbeat. Its leases must lapse with the session, at the session's
	// last expiry, and be granted to nobody before (history, property 8).
	KillSession = "kill_session_process"
	// KillHeartbeat terminates the backend of a session's heartbeat while
	// it waits for a bound lease's row: the process lives on and retries
	// within its trust window, or loses the session.
	KillHeartbeat = "kill_mid_heartbeat"
)

// boundLeasesSQL counts the leases a running session keeps.
const boundLeasesSQL = `
SELECT count(*) FROM distributed_lock_session_lease b JOIN distributed_lock_session s USING (session_id)
WHERE s.session_id = $1 AND s.expires_at > distributed_lock_now()`

// killSession kills (seeded) one of the session workers' processes whose
// session keeps leases now, and records the kill for the checker.
func (in *injector) killSession(ctx context.Context) bool {
	var procs []*process
	var owners []*sessionWorker
	for _, w := range in.sessions {
		p := w.killable()
		if p == nil {
			continue
		}
		var n int
		if err := in.admin.QueryRow(ctx, boundLeasesSQL, p.session.ID()).Scan(&n); err != nil || n == 0 {
			continue // its bindings not made yet, or a restart under way
		}
		procs, owners = append(procs, p), append(owners, w)
	}
	if len(procs) == 0 {
		return false
	}
	i := in.rng.IntN(len(procs))
	p, w := procs[i], owners[i]
	op := history.Op{Client: w.id, Kind: history.SessionKill, Owner: p.owner, Session: p.session.ID(), Call: in.rec.Now()}
	if !w.killProcess(p) {
		return false
	}
	op.Return = in.rec.Now()
	in.rec.Add(op)
	return true
}

// boundKeySQL finds a lease that a running session keeps.
const boundKeySQL = `
SELECT b.lock_key FROM distributed_lock_session_lease b JOIN distributed_lock_session s USING (session_id)
WHERE s.expires_at > distributed_lock_now() ORDER BY random() LIMIT 1`

// boundKey is a key some live session keeps, or "".
func (in *injector) boundKey(ctx context.Context) string {
	var key string
	if err := in.admin.QueryRow(ctx, boundKeySQL).Scan(&key); err != nil {
		return ""
	}
	return key
}

// heartbeatWaitingSQL: a session's heartbeat waits for a row lock.
const heartbeatWaitingSQL = `
SELECT EXISTS (SELECT 1 FROM pg_stat_activity
WHERE query LIKE '%distributed\_lock\_session\_heartbeat(%' AND wait_event_type = 'Lock' AND pid <> pg_backend_pid())`

// killHeartbeat holds a bound lease's row, so the session's next heartbeat
// waits for it, and terminates that heartbeat's backend.
func (in *injector) killHeartbeat(ctx context.Context) (bool, error) {
	key := in.boundKey(ctx)
	if key == "" {
		return false, nil
	}
	return in.killWhile(ctx, in.rowHolder(key), "faults-sess-%", []string{"active"}, "%distributed\\_lock\\_session\\_heartbeat(%")
}

// restartMidHeartbeat holds a bound lease's row (FOR SHARE, as the
// hand-off fault does: the heartbeat locks it for update) and crashes the
// server once a heartbeat waits for it: RestartCrash's first choice
// (observed as restart_mid_heartbeat). False, and no error, when no
// session keeps a lease or no heartbeat came within a TTL.
func (in *injector) restartMidHeartbeat(ctx context.Context) (bool, error) {
	key := in.boundKey(ctx)
	if key == "" {
		return false, nil
	}
	wctx, cancel := context.WithTimeout(ctx, in.ttl)
	defer cancel()
	held := make(chan struct{})
	go func() {
		defer close(held)
		_ = in.hold(wctx, in.ttl, shareRowSQL, key)
	}()
	defer func() { cancel(); <-held }()
	for wctx.Err() == nil {
		var waiting bool
		if err := in.admin.QueryRow(wctx, heartbeatWaitingSQL).Scan(&waiting); err != nil {
			return false, nil
		}
		if waiting {
			rctx, rcancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
			defer rcancel()
			return true, in.crashRestart(rctx)
		}
		sleepCtx(wctx, 2*time.Millisecond)
	}
	return false, nil
}
