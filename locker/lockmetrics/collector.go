package lockmetrics

import (
	"fmt"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	histograms "github.com/lockctl/lockctl/internal/lockmetrics"
)

// Config configures a Collector; the zero Config is the defaults.
type Config struct {
	// Namespace is the metrics' names' first part. Defaults to "locker":
	// locker_wait_seconds, locker_hold_seconds.
	Namespace string
	// Separator ends a key's prefix, the label: "billing:nightly" is
	// "billing". Defaults to ":"; a key without it is its own prefix.
	Separator string
	// MaxPrefixes is how many distinct prefixes get series of their own:
	// the first seen; every later one is counted as "other". Defaults to
	// 100; at most 10000.
	MaxPrefixes int
}

// validate fills in the defaults and refuses what cannot be.
func (c *Config) validate() error {
	if c.Namespace == "" {
		c.Namespace = "locker"
	}
	if c.MaxPrefixes < 0 || c.MaxPrefixes > histograms.MaxMaxPrefixes {
		return fmt.Errorf("lockmetrics: MaxPrefixes %d: want 0 (the default) to %d", c.MaxPrefixes, histograms.MaxMaxPrefixes)
	}
	return nil
}

// Collector holds the service's wait and hold histograms: a
// prometheus.Collector to register, and the timers that feed it. Safe
// for concurrent use.
type Collector struct {
	h        histograms.Histograms
	prefixes *histograms.Prefixes
}

// New returns a Collector with no observations.
func New(cfg Config) (*Collector, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	return &Collector{
		h: histograms.NewHistograms(cfg.Namespace,
			"How long this process's acquires took, from the call until granted (outcome=granted) or until they returned without the key (outcome=gave_up), database calls included, by the key's prefix.",
			"How long this process held the leases its acquires got, from the grant until it ended them, by the key's prefix."),
		prefixes: histograms.NewPrefixes(cfg.Separator, cfg.MaxPrefixes),
	}, nil
}

// Describe and Collect make a Collector a prometheus.Collector.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) { c.h.Describe(ch) }

func (c *Collector) Collect(ch chan<- prometheus.Metric) { c.h.Collect(ch) }

// Wait times one acquire of a key, from Start until Granted or GaveUp.
type Wait struct {
	c      *Collector
	prefix string
	start  time.Time
}

// Start starts timing an acquire of key: call it just before the call.
func (c *Collector) Start(key string) Wait {
	return Wait{c: c, prefix: c.prefixes.Of(key), start: time.Now()}
}

// Granted observes the wait as granted and starts timing the hold.
func (w Wait) Granted() *Hold {
	now := time.Now()
	w.c.h.Wait.WithLabelValues(w.prefix, histograms.OutcomeGranted).Observe(now.Sub(w.start).Seconds())
	return &Hold{c: w.c, prefix: w.prefix, start: now}
}

// GaveUp observes the wait as one that ended without the key.
func (w Wait) GaveUp() {
	w.c.h.Wait.WithLabelValues(w.prefix, histograms.OutcomeGaveUp).Observe(time.Since(w.start).Seconds())
}

// Hold times one lease, from its grant until End.
type Hold struct {
	c      *Collector
	prefix string
	start  time.Time
	once   sync.Once
}

// End observes the hold: call it when the lease ends (released, lost,
// expired, or given back with the service's transaction). Only the first
// call counts; End on a nil Hold (an acquire that failed) does nothing, so
// `defer hold.End()` is safe before checking the error.
func (h *Hold) End() {
	if h == nil {
		return
	}
	h.once.Do(func() {
		h.c.h.Hold.WithLabelValues(h.prefix).Observe(time.Since(h.start).Seconds())
	})
}

// Acquire times acquire, the service's call that takes key, and returns
// what it returned and, when it got the key, the Hold to End when the
// lease ends (nil when it did not).
func Acquire[L any](c *Collector, key string, acquire func() (L, error)) (L, *Hold, error) {
	w := c.Start(key)
	lease, err := acquire()
	if err != nil {
		w.GaveUp()
		return lease, nil, err
	}
	return lease, w.Granted(), nil
}
