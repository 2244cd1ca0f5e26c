package lockmetrics_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/lockctl/lockctl/internal/testdb"
	"github.com/lockctl/lockctl/locker"
	"github.com/lockctl/lockctl/locker/lockmetrics"
)

// series are a registry's histograms by name and labels
// ("locker_wait_seconds{prefix=billing,outcome=granted}").
func series(t *testing.T, reg *prometheus.Registry) map[string]*dto.Histogram {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]*dto.Histogram{}
	for _, f := range families {
		for _, m := range f.GetMetric() {
			name := f.GetName() + "{"
			for i, l := range m.GetLabel() {
				if i > 0 {
					name += ","
				}
				name += l.GetName() + "=" + l.GetValue()
			}
			out[name+"}"] = m.GetHistogram()
		}
	}
	return out
}

func seconds(d time.Duration) float64 { return d.Seconds() }

// A service's collector, registered, observes its acquires as it sees
// them on a real server: a grant at the first try waits its database call
// (more than 0, where the log counts 0), a try refused because the key is
// held is a wait given up, a wait in the queue lasts at least until the
// holder released, and a hold lasts from the grant until End.
func TestCollectorMeasuresTheCaller(t *testing.T) {
	pool := testdb.New(t)
	ctx := context.Background()
	c, err := lockmetrics.New(lockmetrics.Config{})
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(c)
	lk, err := locker.New(locker.Config{TTL: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	const key = "billing:nightly"
	const granted, gaveUp, held = "locker_wait_seconds{outcome=granted,prefix=billing}",
		"locker_wait_seconds{outcome=gave_up,prefix=billing}", "locker_hold_seconds{prefix=billing}"

	leases, hold, err := lockmetrics.Acquire(c, key, func() ([]locker.Lease, error) {
		return lk.Acquire(ctx, pool, locker.Request{Keys: locker.Keys(key), Owner: "holder"})
	})
	if err != nil {
		t.Fatal(err)
	}
	grantedAt := time.Now()
	if w := series(t, reg)[granted]; w.GetSampleCount() != 1 || w.GetSampleSum() <= 0 {
		t.Fatalf("after a grant at the first try: %v; want one wait, its database call's time", w)
	}

	_, refused, err := lockmetrics.Acquire(c, key, func() ([]locker.Lease, error) {
		return lk.Acquire(ctx, pool, locker.Request{Keys: locker.Keys(key), Owner: "other"})
	})
	if !errors.Is(err, locker.ErrHeld) || refused != nil {
		t.Fatalf("a try on a held key: hold %v, %v; want ErrHeld and no hold", refused, err)
	}
	refused.End() // nothing to end: does nothing
	if g := series(t, reg)[gaveUp]; g.GetSampleCount() != 1 {
		t.Fatalf("after a refused try: %v; want one wait given up", g)
	}

	type result struct {
		hold *lockmetrics.Hold
		err  error
	}
	done := make(chan result, 1)
	go func() {
		_, h, err := lockmetrics.Acquire(c, key, func() ([]locker.Lease, error) {
			return lk.Acquire(ctx, pool, locker.Request{Keys: locker.Keys(key), Owner: "waiter", Wait: locker.WaitForever})
		})
		done <- result{h, err}
	}()
	testdb.Eventually(t, 10*time.Second, "the waiter queued", func() bool {
		var n int
		return pool.QueryRow(ctx, `SELECT count(*) FROM distributed_lock_waiter WHERE owner_id = 'waiter'`).Scan(&n) == nil && n == 1
	})
	queuedAt := time.Now()
	if _, err := lk.Release(ctx, pool, leases...); err != nil {
		t.Fatal(err)
	}
	heldFor := time.Since(grantedAt)
	hold.End()
	hold.End() // once only
	releasedAt := time.Now()
	r := <-done
	if r.err != nil {
		t.Fatal(r.err)
	}
	r.hold.End()
	s := series(t, reg)
	if h := s[held]; h.GetSampleCount() != 2 || h.GetSampleSum() < seconds(heldFor) {
		t.Errorf("holds: %v; want 2, the first at least %s", h, heldFor)
	}
	first := s[granted]
	if first.GetSampleCount() != 2 || first.GetSampleSum() < seconds(releasedAt.Sub(queuedAt)) {
		t.Errorf("waits granted: %v; want 2, the queued one at least from its queueing to the release (%s)", first, releasedAt.Sub(queuedAt))
	}
}

// A million distinct keys over thousands of prefixes make at most
// MaxPrefixes prefix labels and "other".
func TestLabelsStayBoundedWithAMillionKeys(t *testing.T) {
	c, err := lockmetrics.New(lockmetrics.Config{MaxPrefixes: 50})
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(c)
	for i := range 1_000_000 {
		c.Start(fmt.Sprintf("tenant-%d:order:%d", i%5000, i)).Granted().End()
	}
	s := series(t, reg)
	if len(s) != 2*51 {
		t.Fatalf("%d series for a million keys over 5000 prefixes; want 51 prefixes (50 and other) × wait and hold", len(s))
	}
	if o := s["locker_hold_seconds{prefix=other}"]; o.GetSampleCount() != 1_000_000-50*200 {
		t.Errorf("other's holds: %d; want every key past the first 50 prefixes", o.GetSampleCount())
	}
}

// New refuses a cap on prefixes it cannot keep.
func TestConfigRefusesTooManyPrefixes(t *testing.T) {
	if _, err := lockmetrics.New(lockmetrics.Config{MaxPrefixes: 20000}); err == nil {
		t.Error("MaxPrefixes 20000 accepted")
	}
}
