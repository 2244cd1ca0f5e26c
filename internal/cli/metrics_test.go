package cli_test

import (
	"context"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/lockctl/lockctl/internal/lockview"
	"github.com/lockctl/lockctl/internal/pgtemp"
	"github.com/lockctl/lockctl/internal/testdb"
	"github.com/lockctl/lockctl/locker"
)

// startMetrics runs `lockctl metrics` on a free port and returns its URL.
func startMetrics(d db, args ...string) (*started, string) {
	d.t.Helper()
	p := d.start(append([]string{"metrics", "--listen", "127.0.0.1:0"}, args...)...)
	m := regexp.MustCompile(`serving (http://\S+/metrics)`).FindStringSubmatch(p.waitForStderr("/metrics\n"))
	if m == nil {
		d.t.Fatalf("metrics did not say where it serves:\n%s", p.stderr)
	}
	return p, m[1]
}

// scrape is one parsed scrape.
type scrape map[string]*dto.MetricFamily

func scrapeURL(t *testing.T, url string) scrape {
	t.Helper()
	// A scrape that hung on the database would fail here, not block the test.
	client := http.Client{Timeout: 20 * time.Second}
	resp, err := client.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s", url, resp.Status)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("scrape of %s does not parse: %v", url, err)
	}
	return families
}

// value is the value of name's series with the given labels ("k=v" each);
// ok is false when there is no such series.
func (s scrape) value(name string, labels ...string) (v float64, ok bool) {
	f := s[name]
	if f == nil {
		return 0, false
	}
	for _, m := range f.GetMetric() {
		var have []string
		for _, l := range m.GetLabel() {
			have = append(have, l.GetName()+"="+l.GetValue())
		}
		sort.Strings(have)
		want := append([]string(nil), labels...)
		sort.Strings(want)
		if strings.Join(have, ",") != strings.Join(want, ",") {
			continue
		}
		switch {
		case m.GetCounter() != nil:
			return m.GetCounter().GetValue(), true
		case m.GetGauge() != nil:
			return m.GetGauge().GetValue(), true
		}
	}
	return 0, false
}

// histogram is name's histogram with the given labels; nil when there is
// none.
func (s scrape) histogram(name string, labels ...string) *dto.Histogram {
	f := s[name]
	if f == nil {
		return nil
	}
	want := append([]string(nil), labels...)
	sort.Strings(want)
	for _, m := range f.GetMetric() {
		var have []string
		for _, l := range m.GetLabel() {
			have = append(have, l.GetName()+"="+l.GetValue())
		}
		sort.Strings(have)
		if strings.Join(have, ",") == strings.Join(want, ",") {
			return m.GetHistogram()
		}
	}
	return nil
}

// labelValues are the values name's series have for label.
func (s scrape) labelValues(name, label string) []string {
	var values []string
	for _, m := range s[name].GetMetric() {
		for _, l := range m.GetLabel() {
			if l.GetName() == label && !slices.Contains(values, l.GetValue()) {
				values = append(values, l.GetValue())
			}
		}
	}
	sort.Strings(values)
	return values
}

func (s scrape) want(t *testing.T, v float64, name string, labels ...string) {
	t.Helper()
	got, ok := s.value(name, labels...)
	if !ok || got != v {
		t.Errorf("%s%v = %v (present: %v); want %v", name, labels, got, ok, v)
	}
}

// After real lock activity a scrape reports the locks by state, the
// oldest lease, the waits (per key only for the top keys) and counters
// from the event log; pruning the log does not make the counters go down.
func TestMetricsAfterLockActivity(t *testing.T) {
	t.Parallel()
	d := newDB(t)
	ctx := context.Background()
	pool := testdb.Pool(t, d.dsn)

	for _, k := range []string{"held", "held2", "held3"} {
		d.json(0, "acquire", k, "--owner", "a", "--ttl", "1m")
	}
	d.json(0, "acquire", "exp", "--owner", "a", "--ttl", "1m")
	d.json(0, "expire", "exp")
	d.json(0, "acquire", "st", "--owner", "a", "--ttl", "1m")
	d.json(0, "expire", "st")
	stolen := d.json(0, "acquire", "st", "--owner", "b")
	d.json(0, "release", "st", "--owner", "b", "--token", tokenArg(stolen.Token))
	lk, err := locker.New(locker.Config{})
	if err != nil {
		t.Fatal(err)
	}
	if err := lk.ReportStaleWrite(ctx, pool, locker.Lease{Key: "held", Owner: "old-owner", Token: 1}, "orders table"); err != nil {
		t.Fatal(err)
	}
	// Four waiters: two on held, one each on held2 and held3 (held2's first).
	for i, k := range []string{"held", "held", "held2", "held3"} {
		d.start("acquire", k, "--owner", "waiter"+tokenArg(int64(i)), "--wait", "1m")
		waitForWaiters(t, pool, k, map[string]int{"held": 1 + i, "held2": 1, "held3": 1}[k])
	}

	p, url := startMetrics(d, "--top-keys", "2", "--settle", "0")
	s := scrapeURL(t, url)
	s.want(t, 1, "lockctl_up")
	s.want(t, 3, "lockctl_locks", "state=held")
	s.want(t, 0, "lockctl_locks", "state=expiring")
	s.want(t, 1, "lockctl_locks", "state=expired")
	s.want(t, 1, "lockctl_locks", "state=free")
	s.want(t, 0, "lockctl_locks", "state=delayed")
	s.want(t, 4, "lockctl_waiters")
	s.want(t, 3, "lockctl_waited_keys")
	s.want(t, 2, "lockctl_key_waiters", "key=held")
	s.want(t, 1, "lockctl_key_waiters", "key=held2")
	if _, ok := s.value("lockctl_key_waiters", "key=held3"); ok {
		t.Errorf("held3 has a per-key series although --top-keys is 2")
	}
	for _, name := range []string{"lockctl_oldest_held_lock_age_seconds", "lockctl_longest_wait_seconds", "lockctl_scrape_duration_seconds"} {
		if v, ok := s.value(name); !ok || v <= 0 || v > 60 {
			t.Errorf("%s = %v (present: %v); want between 0 and 60 seconds", name, v, ok)
		}
	}
	counters := func(s scrape, acquired float64) {
		t.Helper()
		s.want(t, acquired, "lockctl_grants_total", "kind=acquired")
		s.want(t, 1, "lockctl_grants_total", "kind=stolen")
		s.want(t, 1, "lockctl_releases_total")
		s.want(t, 2, "lockctl_force_actions_total", "action=expire")
		s.want(t, 0, "lockctl_force_actions_total", "action=release")
		s.want(t, 1, "lockctl_fenced_writes_rejected_total")
	}
	counters(s, 5)

	// Scraping again counts nothing twice; pruning the whole log takes
	// nothing back; a new grant adds one.
	counters(scrapeURL(t, url), 5)
	d.expect(0, "prune", "--events-older", "1ms")
	counters(scrapeURL(t, url), 5)
	d.json(0, "acquire", "new", "--owner", "a")
	counters(scrapeURL(t, url), 6)

	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if r := p.wait(); r.code != 0 {
		t.Fatalf("metrics after SIGTERM: %s\nwant exit 0", r)
	}
}

// With the database frozen a scrape still answers within --scrape-timeout:
// lockctl_up 0, no stale gauges, the counters as they were; thawed, the
// next scrape reads it again; stopped, the same as frozen.
func TestMetricsWhileDatabaseIsDown(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	srv, err := pgtemp.Start(ctx, pgtemp.Options{Fast: true})
	if err != nil {
		testdb.Unavailable(t, "no PostgreSQL: %v", err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	d := db{t: t, dsn: srv.DSN("")}
	d.expect(0, "migrate")
	d.json(0, "acquire", "k", "--owner", "a")
	_, url := startMetrics(d, "--settle", "0", "--scrape-timeout", "1s")
	s := scrapeURL(t, url)
	s.want(t, 1, "lockctl_up")
	s.want(t, 1, "lockctl_grants_total", "kind=acquired")

	down := func(how string) {
		t.Helper()
		s := scrapeURL(t, url)
		s.want(t, 0, "lockctl_up")
		s.want(t, 1, "lockctl_grants_total", "kind=acquired")
		if _, ok := s.value("lockctl_locks", "state=held"); ok {
			t.Errorf("lockctl_locks reported while the database is %s", how)
		}
	}
	if err := srv.Freeze(); err != nil {
		t.Fatal(err)
	}
	down("frozen")
	if err := srv.Thaw(); err != nil {
		t.Fatal(err)
	}
	scrapeURL(t, url).want(t, 1, "lockctl_up")

	if err := srv.Stop(pgtemp.Immediate); err != nil {
		t.Fatal(err)
	}
	down("stopped")
}

// waitForWaiters waits until key has n live waiters.
func waitForWaiters(t *testing.T, pool *pgxpool.Pool, key string, n int) {
	t.Helper()
	testdb.Eventually(t, 20*time.Second, fmt.Sprintf("%d waiters on %s", n, key), func() bool {
		ws, err := lockview.Waiters(context.Background(), pool, key)
		if err != nil {
			t.Fatal(err)
		}
		return len(ws) >= n
	})
}

// The wait and hold histograms observe what the log records from the
// first scrape on, by key prefix: a grant at the first try as a wait of 0,
// a hand-off after its wait, a wait given up, holds ended by a release or
// a force action; a service's lease whose grant was not logged has no
// hold. Past --max-prefixes, prefixes count as "other".
func TestMetricsWaitAndHoldHistograms(t *testing.T) {
	t.Parallel()
	d := newDB(t)
	ctx := context.Background()
	pool := testdb.Pool(t, d.dsn)
	d.json(0, "acquire", "before:start", "--owner", "a") // logged before the exporter's first scrape: not observed

	_, url := startMetrics(d, "--settle", "0", "--max-prefixes", "2")
	if s := scrapeURL(t, url); len(s["lockctl_wait_seconds"].GetMetric()) != 0 {
		t.Fatalf("the first scrape observed waits: %v", s["lockctl_wait_seconds"])
	}

	b := d.json(0, "acquire", "billing:nightly", "--owner", "a")
	d.json(0, "release", "billing:nightly", "--owner", "a", "--token", tokenArg(b.Token))
	h := d.json(0, "acquire", "orders:1", "--owner", "h", "--ttl", "1m")
	w := d.start("acquire", "orders:1", "--owner", "w", "--wait", "1m", "--json")
	waitForWaiters(t, pool, "orders:1", 1)
	d.expect(3, "acquire", "orders:1", "--owner", "g", "--wait", "1s") // gives up after a second in the queue
	d.json(0, "release", "orders:1", "--owner", "h", "--token", tokenArg(h.Token))
	if r := w.wait(); r.code != 0 {
		t.Fatalf("the waiter: %s", r)
	}
	d.json(0, "expire", "orders:1")
	// A service's lease, its grant not logged: the force action ends it
	// unmeasured.
	svc, err := locker.New(locker.Config{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := testdb.Try(ctx, svc, pool, "orders:svc", "svc-1"); err != nil {
		t.Fatal(err)
	}
	d.json(0, "expire", "orders:svc")
	d.json(0, "acquire", "cache:warm", "--owner", "a")
	d.json(0, "acquire", "jobs:42", "--owner", "a")

	s := scrapeURL(t, url)
	wait := func(prefix, outcome string) *dto.Histogram {
		return s.histogram("lockctl_wait_seconds", "prefix="+prefix, "outcome="+outcome)
	}
	if b := wait("billing", "granted"); b.GetSampleCount() != 1 || b.GetSampleSum() != 0 {
		t.Errorf("billing's waits: %v; want one of 0s", b)
	}
	if o := wait("orders", "granted"); o.GetSampleCount() != 2 || o.GetSampleSum() < 1 {
		t.Errorf("orders' granted waits: %v; want two, the hand-off's over the give-up's second", o)
	}
	// The record was queued a round trip after --wait's second began.
	if g := wait("orders", "gave_up"); g.GetSampleCount() != 1 || g.GetSampleSum() < 0.5 || g.GetSampleSum() > 30 {
		t.Errorf("orders' waits given up: %v; want one of a second or so", g)
	}
	if o := wait("other", "granted"); o.GetSampleCount() != 2 {
		t.Errorf("other's waits: %v; want cache's and jobs' two", o)
	}
	if got := s.labelValues("lockctl_wait_seconds", "prefix"); !slices.Equal(got, []string{"billing", "orders", "other"}) {
		t.Errorf("prefixes %q; want the first two and other", got)
	}
	if b := s.histogram("lockctl_hold_seconds", "prefix=billing"); b.GetSampleCount() != 1 {
		t.Errorf("billing's holds: %v; want its one release", b)
	}
	if o := s.histogram("lockctl_hold_seconds", "prefix=orders"); o.GetSampleCount() != 2 || o.GetSampleSum() < 1 {
		t.Errorf("orders' holds: %v; want h's (over the give-up's second) and w's, forced, not the service's", o)
	}
	if n := len(s.histogram("lockctl_hold_seconds", "prefix=billing").GetBucket()); n != 18 {
		t.Errorf("%d buckets; want 17 and +Inf", n)
	}

	// Scraped again, nothing is observed twice.
	if again := scrapeURL(t, url).histogram("lockctl_wait_seconds", "prefix=orders", "outcome=granted"); again.GetSampleCount() != 2 {
		t.Errorf("orders' granted waits on the next scrape: %v; want still two", again)
	}
}
