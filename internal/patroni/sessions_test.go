package patroni_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/lockctl/lockctl/internal/fencetoken"
	"github.com/lockctl/lockctl/internal/lockdb"
	"github.com/lockctl/lockctl/internal/testdb"
	"github.com/lockctl/lockctl/locker"
	"github.com/lockctl/lockctl/store"
)

// Processes that keep several leases with one locker.Session through both
// changes of primary. What docs/failover.md ("Sessions") says they do:
// the session's row and its leases' expiries are replicated like any
// row, so the new primary has the last acknowledged heartbeat; heartbeats
// refused in the window (unreachable, read-only) are retried within the
// session's trust window; the first that reaches the new primary goes on
// with the same session, its leases and their tokens, all moved to one
// new expiry. Nobody's keepalive ends.
const (
	sessionProcs = 2 // processes with a session each
	sessionKeys  = 3 // leases each keeps with it
	// sessionTTL outlasts a failover (Patroni's ttl of 10 s, then the
	// promotion), so the trust window (TTL less a tenth) does too.
	sessionTTL   = 30 * time.Second
	sessionEvery = 500 * time.Millisecond
)

// sessionHolder is one process keeping sessionKeys leases with a session.
type sessionHolder struct {
	owner   string
	lk      *locker.Locker
	db      *pgxpool.Pool
	session *locker.Session
	leases  []locker.Lease
	ka      *locker.Keepalive
	beats   *beatLog
}

// keepInSession opens owner's session, takes its keys as one set and binds
// them; the grants go into the journal like every other.
func (c *clients) keepInSession(ctx context.Context, owner string) *sessionHolder {
	c.t.Helper()
	h := &sessionHolder{owner: owner, db: c.pool, beats: &beatLog{},
		lk: testdb.Locker(c.t, locker.Config{TTL: sessionTTL, RenewEvery: sessionEvery, DurableRelease: true})}
	var err error
	if h.session, err = h.lk.OpenSession(ctx, beatDB{Pool: c.pool, log: h.beats}, owner); err != nil {
		c.t.Fatalf("%s opens its session: %v", owner, err)
	}
	keys := make([]string, sessionKeys)
	for i := range keys {
		keys[i] = fmt.Sprintf("%s-key-%d", owner, i)
	}
	sent := time.Now()
	if err := call(ctx, func(ctx context.Context) (err error) {
		h.leases, err = h.lk.Acquire(ctx, c.pool, locker.Request{Keys: locker.Keys(keys...), Owner: owner})
		return err
	}); err != nil {
		c.t.Fatalf("%s takes %v: %v", owner, keys, err)
	}
	for _, l := range h.leases {
		c.j.granted(grant{key: l.Key, owner: owner, token: l.Token, sent: sent, acked: time.Now()})
	}
	h.ka = h.session.Keepalive(ctx, h.leases...)
	return h
}

// beatSince says whether a heartbeat sent after t was acknowledged.
func (h *sessionHolder) beatSince(t time.Time) bool {
	last, ok := h.beats.lastOK()
	return ok && last.sent.After(t)
}

// carriedOn checks what docs/failover.md promises of a session across the
// change: its process never lost it (nor any lease's keepalive), the
// heartbeats the change refused were retried within the trust window, and
// on the new primary the session runs, renewed after the change, with its
// leases under their tokens, each ending when it does. failed requires
// the change to have refused a heartbeat (the window was met).
func (h *sessionHolder) carriedOn(ctx context.Context, t *testing.T, ch change, failed bool) {
	t.Helper()
	if err := h.session.Err(); err != nil {
		t.Errorf("%s's session after the %s: %v; want it to carry on", h.owner, ch.what, err)
	}
	if err := context.Cause(h.ka.Context()); err != nil {
		t.Errorf("%s's keepalive after the %s: %v; want it to carry on", h.owner, ch.what, err)
	}
	before, refused, after := h.beats.around(ch.began, ch.done)
	switch {
	case before.sent.IsZero() || after.sent.IsZero():
		t.Errorf("%s: no heartbeat acknowledged before the %s (%v) or after it (%v)", h.owner, ch.what, before.sent, after.sent)
	case after.sent.After(before.sent.Add(sessionTTL - sessionTTL/10)):
		t.Errorf("%s: the first heartbeat acknowledged after the %s was sent %s after the last one before it, past the trust window",
			h.owner, ch.what, after.sent.Sub(before.sent))
	case failed && len(refused) == 0:
		t.Errorf("%s: the %s refused no heartbeat; want the window met and retried", h.owner, ch.what)
	}
	t.Logf("%s across the %s: %d heartbeats refused, then one acknowledged %s after the last before it (%v)",
		h.owner, ch.what, len(refused), after.sent.Sub(before.sent).Round(time.Millisecond), firstErrs(refused))

	var expires, renewed time.Time
	if err := call(ctx, func(ctx context.Context) error {
		return h.db.QueryRow(ctx, `SELECT expires_at, renewed_at FROM distributed_lock_session WHERE session_id = $1`,
			h.session.ID()).Scan(&expires, &renewed)
	}); err != nil {
		t.Errorf("%s's session %d on the new primary: %v", h.owner, h.session.ID(), err)
		return
	}
	var dbNow time.Time
	if err := call(ctx, func(ctx context.Context) error {
		return h.db.QueryRow(ctx, `SELECT clock_timestamp()`).Scan(&dbNow)
	}); err != nil {
		t.Fatal(err)
	}
	if !renewed.After(ch.done.Add(-time.Second)) || !expires.After(dbNow) {
		t.Errorf("%s's session on the new primary: renewed at %v, runs until %v (now %v); want it renewed there and running",
			h.owner, renewed, expires, dbNow)
	}
	for _, l := range h.leases {
		info, found, err := store.Get[lockdb.LockInfo](ctx, h.db, l.Key)
		switch {
		case err != nil:
			t.Errorf("%s on the new primary: %v", l.Key, err)
		case !found || info.Token != l.Token || info.Owner != h.owner || info.ReleasedAt != nil:
			t.Errorf("%s on the new primary: %v; want %s's token %s", l.Key, rowText(info, found), h.owner, fencetoken.Format(l.Token))
		case info.ExpiresAt.Before(expires):
			// A heartbeat may have moved both between the two reads, but
			// never the lease without its session.
			t.Errorf("%s ends at %v, before its session's %v", l.Key, info.ExpiresAt, expires)
		}
	}
}

// close ends the session, which releases its leases (durably: the
// cluster runs in synchronous mode); they are journaled as released.
func (h *sessionHolder) close(ctx context.Context, t *testing.T, j *journal) {
	t.Helper()
	if err := call(ctx, h.session.Close); err != nil {
		t.Errorf("%s closes its session: %v", h.owner, err)
		return
	}
	for _, l := range h.leases {
		j.released(release{key: l.Key, token: l.Token, acked: time.Now()})
	}
}

// beatDB is a session's pool, recording its heartbeats in log.
type beatDB struct {
	*pgxpool.Pool
	log *beatLog
}

func (b beatDB) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	row := b.Pool.QueryRow(ctx, sql, args...)
	if !strings.Contains(sql, "distributed_lock_session_heartbeat(") {
		return row
	}
	return beatRow{row: row, log: b.log, sent: time.Now()}
}

type beatRow struct {
	row  pgx.Row
	log  *beatLog
	sent time.Time
}

func (r beatRow) Scan(dest ...any) error {
	err := r.row.Scan(dest...)
	r.log.add(beat{sent: r.sent, err: err})
	return err
}

// beatLog is every heartbeat a session sent: when, and how it ended.
type beatLog struct {
	mu    sync.Mutex
	beats []beat
}

type beat struct {
	sent time.Time
	err  error
}

func (l *beatLog) add(b beat) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.beats = append(l.beats, b)
}

func (l *beatLog) lastOK() (beat, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for i := len(l.beats) - 1; i >= 0; i-- {
		if l.beats[i].err == nil {
			return l.beats[i], true
		}
	}
	return beat{}, false
}

// around is the last heartbeat acknowledged before began, the heartbeats
// refused after it, and the first acknowledged after those (sent by done
// or later).
func (l *beatLog) around(began, done time.Time) (before beat, refused []beat, after beat) {
	l.mu.Lock()
	defer l.mu.Unlock()
	i := 0
	for ; i < len(l.beats) && l.beats[i].sent.Before(began); i++ {
		if l.beats[i].err == nil {
			before = l.beats[i]
		}
	}
	for ; i < len(l.beats); i++ {
		b := l.beats[i]
		if b.err != nil {
			refused = append(refused, b)
			continue
		}
		if len(refused) > 0 || !b.sent.Before(done) {
			return before, refused, b
		}
		before = b // acknowledged before the change took effect
	}
	return before, refused, beat{}
}

// firstErrs is the first few distinct errors of beats.
func firstErrs(beats []beat) []string {
	var out []string
	for _, b := range beats {
		s := b.err.Error()
		if len(out) < 3 && (len(out) == 0 || out[len(out)-1] != s) {
			out = append(out, s)
		}
	}
	return out
}
