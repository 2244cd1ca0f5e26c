package anylang

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/lockctl/lockctl/internal/history"
	"github.com/lockctl/lockctl/internal/lockview"
	"github.com/lockctl/lockctl/internal/testdb"
	"github.com/lockctl/lockctl/locker"
)

// TestJavaSharesWithGo runs the Java client's shared leases and permits
// (Share.java, through DistributedLock.java's tryAcquirePermit and
// tryAcquireShared) as a separate process, connected as a role with the
// service grants only, while Go lockers take the same keys:
//
//   - Three Java threads and three Go lockers take, renew and release
//     permits of one key of two permits. Read as the console reads them
//     (lockview.HoldersOf) all through the run, the key never has more
//     holders than permits, and has had Java and Go holders at once; every
//     lease granted has a token of its own, and renewals and releases from
//     Java take effect.
//   - A Java reader holds another key shared beside Go readers. A Go writer
//     (exclusive TryAcquire) is refused while the Java reader holds it, also
//     once the Go readers are gone, and is granted as soon as the Java
//     reader releases, with a larger token than every reader's.
func TestJavaSharesWithGo(t *testing.T) {
	client := compileJava(t)
	const (
		perSide    = 3
		permits    = 2
		ttl        = 2 * time.Second
		hold       = 20 * time.Millisecond
		period     = 3 * time.Second
		poolKey    = "anylang-pool"
		sharedKey  = "anylang-config"
		javaReader = "java-reader"
	)
	dsn := testdb.DSN(t)
	pool := testdb.Pool(t, dsn)
	jdbc, err := jdbcURL(dsn, serviceRole(t, pool, dsn))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	var wg sync.WaitGroup
	defer wg.Wait() // after cancel, below: every Go locker gives up
	defer cancel()

	clock := newWallClock()
	java := startSharer(t, ctx, client, "url="+jdbc, "clients="+strconv.Itoa(perSide), "client_base=100",
		"owner_prefix=java", "pool_key="+poolKey, "permits="+strconv.Itoa(permits),
		"duration_ms="+strconv.FormatInt(period.Milliseconds(), 10), "ttl_ms="+strconv.FormatInt(ttl.Milliseconds(), 10),
		"hold_ms="+strconv.FormatInt(hold.Milliseconds(), 10), "seed=1",
		"shared_key="+sharedKey, "reader_owner="+javaReader, "reader_ttl_ms=60000")

	lk, err := locker.New(locker.Config{TTL: ttl, LogGrants: true})
	if err != nil {
		t.Fatal(err)
	}
	rec := history.NewRecorder()
	until := time.Now().Add(period)
	stopSampling := sampleHolders(ctx, pool, poolKey, permits)
	var permitters sync.WaitGroup
	for i := range perSide {
		g := &goClient{id: i, owner: fmt.Sprintf("go-%d", i), lk: lk, pool: pool, rec: rec, clock: clock,
			keys: []string{poolKey}, ttl: ttl, hold: hold, rnd: rand.New(rand.NewPCG(3, uint64(i)))}
		permitters.Go(func() { g.runPermits(ctx, until, permits) })
	}
	wg.Go(permitters.Wait)

	readersCtx, stopReaders := context.WithCancel(ctx)
	defer stopReaders()
	readerTokens := make(chan []int64, perSide)
	readerErrs := make(chan error, perSide)
	var readers sync.WaitGroup
	for i := range perSide {
		readers.Go(func() {
			tokens, err := goReader(readersCtx, lk, pool, sharedKey, fmt.Sprintf("go-reader-%d", i), hold,
				rand.New(rand.NewPCG(4, uint64(i))))
			readerTokens <- tokens
			readerErrs <- err
		})
	}
	wg.Go(readers.Wait)

	javaRead := javaReaderHolds(t, ctx, java, pool, sharedKey, javaReader)
	writerRefused(t, ctx, lk, pool, sharedKey, "while the Java and Go readers hold it")
	javaRead = javaReaderRenews(t, ctx, java, pool, sharedKey, javaRead)

	stopReaders()
	readers.Wait()
	var goTokens []int64
	for range perSide {
		goTokens = append(goTokens, <-readerTokens...)
		if err := <-readerErrs; err != nil {
			t.Error(err)
		}
	}
	if len(goTokens) == 0 {
		t.Error("the Go readers were granted nothing")
	}
	if slices.Contains(goTokens, javaRead.token) {
		t.Errorf("a Go reader was granted the Java reader's token %d", javaRead.token)
	}
	hs := holders(t, ctx, pool, sharedKey)
	if len(hs) != 1 || hs[0].Owner != javaReader {
		t.Fatalf("with the Go readers gone, %q is held by %v; want the Java reader alone", sharedKey, hs)
	}
	writerRefused(t, ctx, lk, pool, sharedKey, "while the Java reader holds it alone")

	java.send("release")
	if f := java.line(); len(f) != 2 || f[0] != "released" || f[1] != "true" {
		t.Fatalf("the Java reader's release answered %q; want released true", f)
	}
	w, err := testdb.Try(ctx, lk, pool, sharedKey, "go-writer")
	if err != nil {
		t.Fatalf("the Go writer right after the Java reader's release: %v; want the key", err)
	}
	if w.Mode != locker.ModeExclusive || w.Token <= javaRead.token || w.Token <= slices.Max(append(goTokens, 0)) {
		t.Errorf("the Go writer was granted %s token %d; want an exclusive lease with a token above the Java reader's %d and every Go reader's (up to %d)",
			w.Mode, w.Token, javaRead.token, slices.Max(append(goTokens, 0)))
	}
	if _, err := testdb.One(lk.Release(ctx, pool, w)); err != nil {
		t.Fatal(err)
	}

	permitters.Wait()
	javaOps := java.finish(clock)
	samples, err := stopSampling()
	if err != nil {
		t.Fatal(err)
	}
	checkPermits(t, append(rec.Ops(), javaOps...), samples, permits)
}

// checkPermits checks the permit operations of both sides and what the
// holders looked like meanwhile.
func checkPermits(t *testing.T, ops []history.Op, s holderSamples, permits int) {
	t.Helper()
	t.Logf("%d samples of the holders: at most %d at once, all %d permits held in %d, Java and Go holding at once in %d",
		s.n, s.most, permits, s.full, s.mixed)
	for _, o := range s.over {
		t.Errorf("more holders than the %d permits: %s", permits, o)
	}
	if s.full == 0 || s.mixed == 0 {
		t.Errorf("the samples never saw every permit held (%d) or Java and Go holding at once (%d); the run did not exercise them",
			s.full, s.mixed)
	}

	grants := map[int64]history.Op{}
	for _, op := range ops {
		if op.Result == history.Unknown || op.Result == history.Failed {
			t.Errorf("client %d (%s): %s %q ended with an error: %s", op.Client, op.Owner, op.Kind, op.Key, op.Err)
		}
		if op.Kind != history.Grant || op.Result != history.OK {
			continue
		}
		if prev, dup := grants[op.Token]; dup {
			t.Errorf("token %d was granted to %s and to %s; every holder's lease has a token of its own", op.Token, prev.Owner, op.Owner)
		}
		grants[op.Token] = op
	}
	type tally struct{ grants, refused, renewed, released int }
	sides := map[string]*tally{"go": {}, "java": {}}
	for _, op := range ops {
		n := sides[side(op.Owner)]
		switch {
		case op.Kind == history.Grant && op.Result == history.OK:
			n.grants++
		case op.Kind == history.Grant && op.Result == history.Held:
			n.refused++
		case op.Kind == history.Renew && op.Result == history.OK:
			n.renewed++
			if g := grants[op.Token]; !op.ExpiresAt.After(g.ExpiresAt) {
				t.Errorf("%s renewed token %d to expire at %s, not after its grant's %s", op.Owner, op.Token, op.ExpiresAt, g.ExpiresAt)
			}
		case op.Kind == history.Release && op.Result == history.OK:
			n.released++
		}
	}
	for name, n := range sides {
		t.Logf("%s: %d permits granted, %d refused, %d renewed, %d released", name, n.grants, n.refused, n.renewed, n.released)
		if n.grants == 0 || n.renewed == 0 || n.released == 0 {
			t.Errorf("the %s clients were granted %d permits, renewed %d and released %d; the run did not exercise them",
				name, n.grants, n.renewed, n.released)
		}
	}
	if sides["go"].refused+sides["java"].refused == 0 {
		t.Error("no permit was ever refused; the run did not contend for them")
	}
}

// readerLease is the Java reader's lease as Share.java reports it.
type readerLease struct {
	token     int64
	expiresAt time.Time
}

// javaReaderHolds reads the Java reader's grant and waits until key's
// holders show it beside a Go reader, each with its own token.
func javaReaderHolds(t *testing.T, ctx context.Context, java *sharer, pool *pgxpool.Pool, key, owner string) readerLease {
	t.Helper()
	f := java.line()
	if len(f) != 4 || f[0] != "shared" || f[3] != "acquired" {
		t.Fatalf("the Java reader answered %q; want its shared lease, acquired", f)
	}
	lease := readerLease{token: java.int(f[1]), expiresAt: time.Unix(0, java.int(f[2]))}
	var hs []lockview.Holder
	testdb.Eventually(t, 10*time.Second, "the Java reader holding "+key+" beside a Go reader", func() bool {
		hs = holders(t, ctx, pool, key)
		javaHolds, goHolds := false, false
		for _, h := range hs {
			javaHolds = javaHolds || h.Owner == owner && h.Token == lease.token
			goHolds = goHolds || side(h.Owner) == "go" && h.Token != lease.token
		}
		return javaHolds && goHolds
	})
	t.Logf("%q held shared by %v", key, hs)
	return lease
}

// javaReaderRenews has the Java reader renew its lease: the same token,
// a later expiry, which the holders show.
func javaReaderRenews(t *testing.T, ctx context.Context, java *sharer, pool *pgxpool.Pool, key string, lease readerLease) readerLease {
	t.Helper()
	java.send("renew")
	f := java.line()
	if len(f) != 3 || f[0] != "renewed" {
		t.Fatalf("the Java reader's renewal answered %q; want renewed", f)
	}
	renewed := readerLease{token: java.int(f[1]), expiresAt: time.Unix(0, java.int(f[2]))}
	if renewed.token != lease.token || !renewed.expiresAt.After(lease.expiresAt) {
		t.Fatalf("the Java reader renewed token %d (expiring %s) to token %d expiring %s; want the same token, later",
			lease.token, lease.expiresAt, renewed.token, renewed.expiresAt)
	}
	for _, h := range holders(t, ctx, pool, key) {
		if h.Token == lease.token && !h.ExpiresAt.Equal(renewed.expiresAt) {
			t.Errorf("the holders show the Java reader's lease expiring %s; its renewal said %s", h.ExpiresAt, renewed.expiresAt)
		}
	}
	return renewed
}

// writerRefused checks that an exclusive TryAcquire of key is refused.
func writerRefused(t *testing.T, ctx context.Context, lk *locker.Locker, pool *pgxpool.Pool, key, when string) {
	t.Helper()
	w, err := testdb.Try(ctx, lk, pool, key, "go-writer")
	var held *locker.Error
	if !errors.As(err, &held) {
		if err == nil {
			_, _ = testdb.One(lk.Release(ctx, pool, w))
		}
		t.Fatalf("the Go writer %s: lease %+v, %v; want a *HeldError", when, w, err)
	}
}

func holders(t *testing.T, ctx context.Context, pool *pgxpool.Pool, key string) []lockview.Holder {
	t.Helper()
	byKey, err := lockview.HoldersOf(ctx, pool, []string{key})
	if err != nil {
		t.Fatal(err)
	}
	return byKey[key]
}

// TestHolderSamplesCatchTooManyHolders proves the sampling in
// TestJavaSharesWithGo can fail: three readers of a key, sampled as a key
// of two permits, are seen as one holder too many.
func TestHolderSamplesCatchTooManyHolders(t *testing.T) {
	pool := testdb.New(t)
	ctx := context.Background()
	lk := testdb.Locker(t, locker.Config{TTL: time.Minute})
	for _, owner := range []string{"go-1", "java-1", "go-2"} {
		if _, err := testdb.One(lk.Acquire(ctx, pool, locker.Request{Keys: []locker.Key{{Name: "anylang-over", Mode: locker.ModeShared}}, Owner: owner})); err != nil {
			t.Fatal(err)
		}
	}
	s, err := sampleHolders(ctx, pool, "anylang-over", 2)()
	if err != nil {
		t.Fatal(err)
	}
	if s.most != 3 || len(s.over) == 0 || s.mixed == 0 {
		t.Fatalf("samples of three readers as two permits: %+v; want 3 holders at once, reported as too many, of both sides", s)
	}
}
