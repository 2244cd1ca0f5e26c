package bench

import (
	"context"
	"testing"
	"time"

	"github.com/lockctl/lockctl/internal/testdb"
)

// The checker is what makes "0 violations" mean something: it must count
// each kind of broken rule it is shown.
func TestCheckerCountsViolations(t *testing.T) {
	c := newChecker()
	c.granted("k", "a", 5)
	c.releasing("k", "a")
	c.granted("k", "b", 7) // fine: released before, larger token
	c.granted("k", "c", 9) // b still holds k
	c.releasing("k", "c")
	c.granted("k", "d", 6) // token went backwards
	c.releasing("k", "d")
	c.granted("other", "a", 1) // tokens are checked per key
	c.releaseLost()
	want := Violations{Exclusion: 1, TokenOrder: 1, LostLease: 1}
	if got := c.violations(); got != want {
		t.Fatalf("violations = %+v, want %+v", got, want)
	}
	if !newChecker().violations().Zero() || want.Zero() {
		t.Fatal("Zero() is wrong")
	}
}

func TestPercentileAndMedian(t *testing.T) {
	ms := func(n ...int) []time.Duration {
		var d []time.Duration
		for _, x := range n {
			d = append(d, time.Duration(x)*time.Millisecond)
		}
		return d
	}
	sorted := ms(1, 2, 3, 4, 5, 6, 7, 8, 9, 10)
	if p := percentile(sorted, 0.5); p != 5*time.Millisecond {
		t.Errorf("p50 = %s, want 5ms", p)
	}
	if p := percentile(sorted, 0.99); p != 10*time.Millisecond {
		t.Errorf("p99 = %s, want 10ms", p)
	}
	if p := percentile(nil, 0.5); p != 0 {
		t.Errorf("p50 of nothing = %s, want 0", p)
	}
	if m := median([]float64{3, 1, 2}); m != 2 {
		t.Errorf("median = %v, want 2", m)
	}
	if m := median([]float64{4, 1, 3, 2}); m != 2.5 {
		t.Errorf("median = %v, want 2.5", m)
	}
	if m := median([]float64(nil)); m != 0 {
		t.Errorf("median of nothing = %v, want 0", m)
	}
}

// The round-trip counter counts every statement a worker sends, BEGIN and
// COMMIT included, and with --rtt holds each one back; statements without a
// worker's counter are neither counted nor delayed.
func TestRoundTripCounter(t *testing.T) {
	ctx := context.Background()
	tg, err := openTargetRTT(ctx, testdb.DSN(t), 2, 30*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	defer tg.close(ctx)
	var n int64
	wctx := withRoundTrips(ctx, &n)
	started := time.Now()
	tx, err := tg.pool.Begin(wctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(wctx, floorSelectSQL); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(wctx); err != nil {
		t.Fatal(err)
	}
	if n != 3 {
		t.Errorf("counted %d round trips for BEGIN, SELECT, COMMIT; want 3", n)
	}
	if took := time.Since(started); took < 90*time.Millisecond {
		t.Errorf("3 statements at a simulated 30ms round trip took %s; want at least 90ms", took)
	}
	if _, err := tg.pool.Exec(ctx, floorSelectSQL); err != nil || n != 3 {
		t.Errorf("a statement outside a worker was counted (n=%d) or failed: %v", n, err)
	}
}
