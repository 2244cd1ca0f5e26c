package roles_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/lockctl/lockctl/internal/lockdb"
	"github.com/lockctl/lockctl/internal/roles"
	"github.com/lockctl/lockctl/internal/testdb"
	"github.com/lockctl/lockctl/locker"
	"github.com/lockctl/lockctl/store"
)

// A viewer may NOTIFY any channel (it needs no privilege) and read every
// waiter's id and wake channel. Each forgery below is a payload of a shape
// the Notifier accepts, sent to a waiting service's channel while another
// owner of the same service holds the key: the waiter must not be granted
// anything, the holder keeps its lease, and the waiter stays queued with
// its record, to be served by the real release.

// quietFor is how long a waiter is watched after a forgery: the old trust
// in the payload returned at once, so the window only bounds how long a
// broken waiter has to show itself.
const quietFor = time.Second

// waitingService is a service process that waits: a Locker on the service
// role's pool whose Notifier LISTENs as that role, waking only on NOTIFY
// (its checks are a minute apart).
func waitingService(t *testing.T, svc *pgxpool.Pool) *locker.Locker {
	t.Helper()
	n := locker.NewNotifier(locker.NotifierConfig{Connect: lockdb.ConnectWith(svc.Config().ConnConfig)})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = n.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	testdb.Eventually(t, 10*time.Second, "the notifier listening", n.Live)
	return testdb.Locker(t, locker.Config{TTL: time.Minute, Notifier: n, WaitRecheck: time.Minute})
}

// queuedRecord is a waiter record as a viewer reads it.
type queuedRecord struct {
	id      int64
	channel string
}

func recordsOf(t *testing.T, db *pgxpool.Pool, owner string) []queuedRecord {
	t.Helper()
	rows, err := db.Query(context.Background(), `SELECT waiter_id, wake_channel FROM distributed_lock_waiter
		WHERE owner_id = $1 ORDER BY lock_key`, owner)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var rs []queuedRecord
	for rows.Next() {
		var r queuedRecord
		if err := rows.Scan(&r.id, &r.channel); err != nil {
			t.Fatal(err)
		}
		rs = append(rs, r)
	}
	return rs
}

// handOffPayload is a hand-off's payload as distributed_lock_grant_waiter
// builds it, naming waiter id and the lease given; extra adds fields (a
// shared hand-off's mode).
func handOffPayload(schema, key string, id int64, owner string, token int64, extra map[string]any) string {
	now := time.Now()
	p := map[string]any{"schema": schema, "key": key, "waiter": id, "owner": owner, "token": token,
		"kind": "acquired", "acquired_us": now.UnixMicro(), "expires_us": now.Add(30 * time.Second).UnixMicro(),
		"ttl_us": (30 * time.Second).Microseconds()}
	for k, v := range extra {
		p[k] = v
	}
	b, _ := json.Marshal(p)
	return string(b)
}

func notify(t *testing.T, viewer *pgxpool.Pool, channel, payload string) {
	t.Helper()
	if _, err := viewer.Exec(context.Background(), `SELECT pg_notify($1, $2)`, channel, payload); err != nil {
		t.Fatalf("the viewer's NOTIFY: %v", err)
	}
}

// stillHeld checks that key is still holder's lease granted with token.
func stillHeld(t *testing.T, admin *pgxpool.Pool, key, holder string, token int64) {
	t.Helper()
	info, found, err := store.Get[lockdb.LockInfo](context.Background(), admin, key)
	if err != nil || !found || info.Owner != holder || info.Token != token || info.ReleasedAt != nil {
		t.Fatalf("after the forgery %s is %+v (found %v, %v); want still %s's lease %d", key, info, found, err, holder, token)
	}
}

func TestForgedWakeUpsGrantNothing(t *testing.T) {
	t.Parallel()
	forgeries := []struct {
		name string
		// payloads: what the viewer sends, given the schema, the key, the
		// waiter's record and the holder's lease.
		payloads func(schema, key string, r queuedRecord, holder locker.Lease) []string
	}{
		{"a hand-off of the holder's lease", func(schema, key string, r queuedRecord, h locker.Lease) []string {
			return []string{handOffPayload(schema, key, r.id, h.Owner, h.Token, nil)}
		}},
		{"a hand-off naming the waiter as owner, a made-up token", func(schema, key string, r queuedRecord, h locker.Lease) []string {
			return []string{handOffPayload(schema, key, r.id, "runner", 1<<50, map[string]any{"kind": "stolen"})}
		}},
		{"a shared and a permit hand-off", func(schema, key string, r queuedRecord, h locker.Lease) []string {
			return []string{
				handOffPayload(schema, key, r.id, "runner", h.Token+1, map[string]any{"mode": "shared"}),
				handOffPayload(schema, key, r.id, "runner", h.Token+2, map[string]any{"mode": "semaphore"}),
			}
		}},
		{"a wake-up, a hand-off to another waiter, garbled ones", func(schema, key string, r queuedRecord, h locker.Lease) []string {
			far := map[string]any{"expires_us": time.Now().Add(24 * time.Hour).UnixMicro()}
			return []string{
				fmt.Sprintf(`{"schema": %q, "key": %q}`, schema, key),
				handOffPayload(schema, key, r.id+1000, "someone", h.Token, far),
				handOffPayload(schema, key, r.id+1001, "someone", h.Token, map[string]any{"expires_us": time.Now().UnixMicro()}),
				`not json`, `{"key": 5}`, fmt.Sprintf(`{"schema": %q, "key": %q, "waiter": %d}`, schema, key, r.id),
			}
		}},
	}
	for _, f := range forgeries {
		t.Run(f.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			e := newEnv(t)
			svc := e.roleWith(t, roles.Service)
			viewer := e.roleWith(t, roles.Viewer)
			lk := waitingService(t, svc)
			holder, err := testdb.Try(ctx, lk, svc, "my", "holder")
			if err != nil {
				t.Fatal(err)
			}
			got := testdb.AcquireAsync(ctx, lk, svc, "my", "runner")
			testdb.WaitForWaiter(t, viewer, "my", "runner")
			records := recordsOf(t, viewer, "runner")
			for _, p := range f.payloads(e.schema, "my", records[0], holder) {
				notify(t, viewer, records[0].channel, p)
			}
			select {
			case r := <-got:
				t.Fatalf("the waiter returned on a forged notification: %+v, %v", r.Lease, r.Err)
			case <-time.After(quietFor):
			}
			stillHeld(t, e.admin, "my", "holder", holder.Token)
			if now := recordsOf(t, viewer, "runner"); len(now) != 1 || now[0] != records[0] {
				t.Fatalf("the waiter's records after the forgery: %+v; want %+v kept", now, records)
			}
			// The real release still serves it.
			if _, err := testdb.One(lk.Release(ctx, svc, holder)); err != nil {
				t.Fatal(err)
			}
			r := <-got
			if r.Err != nil || r.Lease.Owner != "runner" || r.Lease.Token <= holder.Token {
				t.Fatalf("after the release the waiter got %+v, %v; want runner's lease above %d", r.Lease, r.Err, holder.Token)
			}
		})
	}
}

// A waiter for a permit and a waiting set are told the same lies.
func TestForgedWakeUpsGrantNoPermitOrSet(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := newEnv(t)
	svc := e.roleWith(t, roles.Service)
	viewer := e.roleWith(t, roles.Viewer)
	lk := waitingService(t, svc)

	full, err := testdb.One(lk.Acquire(ctx, svc, locker.Request{Keys: []locker.Key{{Name: "sem", Mode: locker.ModeSemaphore, Permits: 1}}, Owner: "holder"}))
	if err != nil {
		t.Fatal(err)
	}
	permitCh := make(chan testdb.Acquired, 1)
	go func() {
		l, err := testdb.One(lk.Acquire(ctx, svc, locker.Request{Keys: []locker.Key{{Name: "sem", Mode: locker.ModeSemaphore, Permits: 1}}, Owner: "permit-runner", Wait: locker.WaitForever}))
		permitCh <- testdb.Acquired{Lease: l, Err: err}
	}()
	held, err := testdb.Try(ctx, lk, svc, "set-b", "holder")
	if err != nil {
		t.Fatal(err)
	}
	setCh := make(chan error, 1)
	go func() {
		_, err := lk.Acquire(ctx, svc, locker.Request{Keys: locker.Keys([]string{"set-a", "set-b"}...), Owner: "set-runner", Wait: locker.WaitForever})
		setCh <- err
	}()
	testdb.WaitForWaiter(t, viewer, "sem", "permit-runner")
	testdb.WaitForWaiter(t, viewer, "set-b", "set-runner")

	permit := recordsOf(t, viewer, "permit-runner")[0]
	notify(t, viewer, permit.channel, handOffPayload(e.schema, "sem", permit.id, "permit-runner", full.Token+1,
		map[string]any{"mode": "semaphore"}))
	for i, r := range recordsOf(t, viewer, "set-runner") {
		key := []string{"set-a", "set-b"}[i]
		notify(t, viewer, r.channel, handOffPayload(e.schema, key, r.id, "set-runner", held.Token+1, nil))
	}
	select {
	case r := <-permitCh:
		t.Fatalf("the permit waiter returned on a forged notification: %+v, %v", r.Lease, r.Err)
	case err := <-setCh:
		t.Fatalf("the waiting set returned on forged notifications: %v", err)
	case <-time.After(quietFor):
	}
	if n := len(recordsOf(t, viewer, "permit-runner")); n != 1 {
		t.Fatalf("the permit waiter has %d records; want its one kept", n)
	}
	if n := len(recordsOf(t, viewer, "set-runner")); n != 2 {
		t.Fatalf("the waiting set has %d records; want both kept", n)
	}
	stillHeld(t, e.admin, "set-b", "holder", held.Token)
	if _, err := testdb.One(lk.Release(ctx, svc, full)); err != nil {
		t.Fatal(err)
	}
	if r := <-permitCh; r.Err != nil || r.Lease.Owner != "permit-runner" {
		t.Fatalf("after the release the permit waiter got %+v, %v", r.Lease, r.Err)
	}
	if _, err := testdb.One(lk.Release(ctx, svc, held)); err != nil {
		t.Fatal(err)
	}
	if err := <-setCh; err != nil {
		t.Fatalf("after the release the set got %v", err)
	}
}

// A forged hand-off to another waiter, with a far-off expiry, is a hint
// that may only wake the waiter sooner: when the holder's lease lapses
// unreleased (no NOTIFY comes), the waiter still checks at its end and
// takes the key over, rather than sleeping until the forged expiry.
func TestForgedRetimeDoesNotPutAWaiterToSleep(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := newEnv(t)
	svc := e.roleWith(t, roles.Service)
	viewer := e.roleWith(t, roles.Viewer)
	lk := waitingService(t, svc)
	short := testdb.Locker(t, locker.Config{TTL: 2 * time.Second})
	holder, err := testdb.Try(ctx, short, svc, "my", "holder")
	if err != nil {
		t.Fatal(err)
	}
	got := testdb.AcquireAsync(ctx, lk, svc, "my", "runner")
	testdb.WaitForWaiter(t, viewer, "my", "runner")
	r := recordsOf(t, viewer, "runner")[0]
	far := map[string]any{"expires_us": time.Now().Add(24 * time.Hour).UnixMicro(),
		"acquired_us": time.Now().UnixMicro()}
	// After its first check (half a second after it queued), when the old
	// code trusted it.
	time.Sleep(700 * time.Millisecond)
	notify(t, viewer, r.channel, handOffPayload(e.schema, "my", r.id+1000, "someone", holder.Token, far))
	select {
	case a := <-got:
		if a.Err != nil || a.Lease.Owner != "runner" || a.Lease.Token <= holder.Token {
			t.Fatalf("the waiter got %+v, %v; want runner's lease, taken over from the lapsed one", a.Lease, a.Err)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("the waiter slept past the lapse of the holder's lease, on a forged expiry")
	}
}
