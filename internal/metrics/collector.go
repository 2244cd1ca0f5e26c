package metrics

import (
	"context"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/lockctl/lockctl/internal/lockdb"
	"github.com/lockctl/lockctl/internal/lockview"
	"github.com/lockctl/lockctl/store"
)

// Config configures a Collector.
type Config struct {
	// DB is where the locks are; every scrape reads it.
	DB store.DBTX
	// Timeout bounds the database reads of one scrape. Defaults to 5s.
	Timeout time.Duration
	// TopKeys is how many keys, those with the most waiters, get a
	// lockctl_key_waiters series. 0 turns the per-key series off.
	TopKeys int
	// Settle is how long after an event occurred it is counted, so a
	// transaction that wrote it has time to commit (see
	// lockview.CountEvents). 0 counts events at once; `lockctl metrics`
	// uses 5s. The wait and hold histograms observe events as late.
	Settle time.Duration
	// PrefixSeparator ends the key prefix that labels the histograms.
	// Defaults to lockmetrics.DefaultSeparator (":").
	PrefixSeparator string
	// MaxPrefixes is how many distinct prefixes get series of their own;
	// later ones are counted as lockmetrics.Other. Defaults to
	// lockmetrics.DefaultMaxPrefixes (100).
	MaxPrefixes int
}

// Collector is a prometheus.Collector that queries the database on each
// scrape. Scrapes are serialised: two at once would count the same span of
// the event log twice.
type Collector struct {
	cfg Config

	mu      sync.Mutex
	counted time.Time        // end of the event-log span counted so far
	totals  map[string]int64 // events counted so far, by kind
	times   waitsAndHolds
}

// New returns a Collector for cfg with its defaults filled in.
func New(cfg Config) *Collector {
	if cfg.Timeout <= 0 {
		cfg.Timeout = 5 * time.Second
	}
	cfg.Settle = max(cfg.Settle, 0)
	return &Collector{cfg: cfg, totals: map[string]int64{}, times: newWaitsAndHolds(cfg)}
}

var (
	upDesc = prometheus.NewDesc("lockctl_up",
		"1 if the last scrape read the database, 0 if it failed (then only the counters are reported).", nil, nil)
	scrapeDesc = prometheus.NewDesc("lockctl_scrape_duration_seconds",
		"How long the last scrape's database reads took.", nil, nil)
	locksDesc = prometheus.NewDesc("lockctl_locks",
		"Lock rows by state: held (not yet expiring), expiring (under a fifth of the TTL and 10s left), expired (not released, past expiry), delayed (in its lock-delay: not grantable until it ends), free (released).",
		[]string{"state"}, nil)
	oldestHeldDesc = prometheus.NewDesc("lockctl_oldest_held_lock_age_seconds",
		"How long the longest-held live lease has been held since its grant (renewals included); 0 without live leases.", nil, nil)
	waitersDesc = prometheus.NewDesc("lockctl_waiters",
		"Live waiter records (blocked acquires), all keys.", nil, nil)
	waitedKeysDesc = prometheus.NewDesc("lockctl_waited_keys",
		"Keys with at least one live waiter.", nil, nil)
	longestWaitDesc = prometheus.NewDesc("lockctl_longest_wait_seconds",
		"How long the longest-waiting live waiter has waited; 0 without waiters.", nil, nil)
	keyWaitersDesc = prometheus.NewDesc("lockctl_key_waiters",
		"Live waiters of the keys with the most waiters (only the top --top-keys keys, to bound cardinality).",
		[]string{"key"}, nil)
	keyLongestWaitDesc = prometheus.NewDesc("lockctl_key_longest_wait_seconds",
		"How long the longest waiter of each of those keys has waited.", []string{"key"}, nil)
	grantsDesc = prometheus.NewDesc("lockctl_grants_total",
		"Grants recorded in the event log: kind acquired (logged only by lockers with LogGrants: the CLI, the console) or stolen (an expired lease taken over; always logged).",
		[]string{"kind"}, nil)
	releasesDesc = prometheus.NewDesc("lockctl_releases_total",
		"Releases recorded in the event log (logged only by lockers with LogGrants).", nil, nil)
	forceDesc = prometheus.NewDesc("lockctl_force_actions_total",
		"Operator force actions recorded in the event log, by action (expire, release).", []string{"action"}, nil)
	rejectedDesc = prometheus.NewDesc("lockctl_fenced_writes_rejected_total",
		"Writes fenced with a stale token that were refused and recorded (locker.ReportStaleWrite).", nil, nil)
)

// Describe sends every metric's description.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{upDesc, scrapeDesc, locksDesc, oldestHeldDesc, waitersDesc,
		waitedKeysDesc, longestWaitDesc, keyWaitersDesc, keyLongestWaitDesc, grantsDesc, releasesDesc,
		forceDesc, rejectedDesc} {
		ch <- d
	}
	c.times.hist.Describe(ch)
}

// Collect reads the database and sends the metrics. If a read fails,
// lockctl_up is 0, the gauges are left out rather than repeated stale, and
// the counters and histograms report what was counted before.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	defer c.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), c.cfg.Timeout)
	defer cancel()
	start := time.Now()
	err := c.collectGauges(ctx, ch)
	if err == nil {
		err = c.countEvents(ctx)
	}
	if err == nil {
		err = c.times.observe(ctx, c.cfg.DB, c.cfg.Settle)
	}
	ch <- gauge(scrapeDesc, time.Since(start).Seconds())
	up := 1.0
	if err != nil {
		up = 0
	}
	ch <- gauge(upDesc, up)
	c.sendCounters(ch)
	c.times.hist.Collect(ch)
}

func (c *Collector) collectGauges(ctx context.Context, ch chan<- prometheus.Metric) error {
	g, err := lockview.ReadGauges(ctx, c.cfg.DB)
	if err != nil {
		return err
	}
	var top []lockview.KeyWaiters
	if c.cfg.TopKeys > 0 && g.Waiters > 0 {
		if top, err = lockview.TopWaited(ctx, c.cfg.DB, c.cfg.TopKeys); err != nil {
			return err
		}
	}
	ch <- gauge(locksDesc, float64(g.Held), string(lockdb.StateHeld))
	ch <- gauge(locksDesc, float64(g.Expiring), string(lockdb.StateExpiring))
	ch <- gauge(locksDesc, float64(g.Expired), string(lockdb.StateExpired))
	ch <- gauge(locksDesc, float64(g.Delayed), string(lockdb.StateDelayed))
	ch <- gauge(locksDesc, float64(g.Free), string(lockdb.StateFree))
	ch <- gauge(oldestHeldDesc, g.OldestHeld.Seconds())
	ch <- gauge(waitersDesc, float64(g.Waiters))
	ch <- gauge(waitedKeysDesc, float64(g.WaitedKeys))
	ch <- gauge(longestWaitDesc, g.LongestWait.Seconds())
	for _, k := range top {
		ch <- gauge(keyWaitersDesc, float64(k.Waiters), k.Key)
		ch <- gauge(keyLongestWaitDesc, k.LongestWait.Seconds(), k.Key)
	}
	return nil
}

// countEvents adds the events of the log span since the last count to the
// totals. The span only moves forward: events pruned from the log were
// counted before they could be pruned (prune keeps at least its
// --events-older, far longer than a scrape interval), and new events land
// after the span counted.
func (c *Collector) countEvents(ctx context.Context) error {
	counts, err := lockview.CountEvents(ctx, c.cfg.DB, c.counted, c.cfg.Settle)
	if err != nil {
		return err
	}
	if counts.Through.Before(c.counted) { // the database clock went back: wait for it
		return nil
	}
	for kind, n := range counts.ByKind {
		c.totals[kind] += n
	}
	c.counted = counts.Through
	return nil
}

func (c *Collector) sendCounters(ch chan<- prometheus.Metric) {
	ch <- counter(grantsDesc, c.totals[lockdb.EventAcquired], "acquired")
	ch <- counter(grantsDesc, c.totals[lockdb.EventStolen], "stolen")
	ch <- counter(releasesDesc, c.totals[lockdb.EventReleased])
	ch <- counter(forceDesc, c.totals[lockdb.EventForceExpired], "expire")
	ch <- counter(forceDesc, c.totals[lockdb.EventForceReleased], "release")
	ch <- counter(rejectedDesc, c.totals[lockdb.EventStaleWriteRejected])
}

func gauge(d *prometheus.Desc, v float64, labels ...string) prometheus.Metric {
	return prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
}

func counter(d *prometheus.Desc, v int64, labels ...string) prometheus.Metric {
	return prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), labels...)
}
