package bench

import (
	"io"
	"slices"
	"time"
)

// Options configure Run. The zero value runs the default benchmark.
type Options struct {
	// Workers are the concurrency levels measured. Defaults to 1, 8 and 32.
	Workers []int
	// Duration is how long each series runs in each round. Defaults to 2s.
	Duration time.Duration
	// Rounds is how many times every series runs; results are medians over
	// rounds. Defaults to 3.
	Rounds int
	// HotKeys is how many keys all workers share in the contended scenario.
	// Defaults to 4.
	HotKeys int
	// TTL is the lease length of the lock series (long enough that no lease
	// expires during a cycle). Defaults to 30s.
	TTL time.Duration

	// RTT is added before every statement of the lock and floor series, to
	// see the designs over a network instead of loopback. Defaults to 0.
	RTT time.Duration

	// KeepaliveLocks is how many held locks the keepalive measurement keeps
	// alive, each with its own Locker.Keepalive. Defaults to 1000; negative
	// skips the measurement.
	KeepaliveLocks int
	// KeepaliveTTL is their lease length (renewed every third of it).
	// Defaults to 30s.
	KeepaliveTTL time.Duration
	// KeepaliveFor is how long the client's CPU time is measured. Defaults
	// to 30s.
	KeepaliveFor time.Duration

	// Progress receives one line per finished series, so a long run shows
	// it is alive. nil: silent.
	Progress io.Writer
}

func (o Options) withDefaults() (Options, error) {
	if len(o.Workers) == 0 {
		o.Workers = []int{1, 8, 32}
	}
	if o.Duration == 0 {
		o.Duration = 2 * time.Second
	}
	if o.Rounds == 0 {
		o.Rounds = 3
	}
	if o.HotKeys == 0 {
		o.HotKeys = 4
	}
	if o.TTL == 0 {
		o.TTL = 30 * time.Second
	}
	if o.KeepaliveLocks == 0 {
		o.KeepaliveLocks = 1000
	}
	if o.KeepaliveTTL == 0 {
		o.KeepaliveTTL = 30 * time.Second
	}
	if o.KeepaliveFor == 0 {
		o.KeepaliveFor = 30 * time.Second
	}
	if o.Progress == nil {
		o.Progress = io.Discard
	}
	o.Workers = slices.Clone(o.Workers)
	slices.Sort(o.Workers)
	o.Workers = slices.Compact(o.Workers)
	return o, o.validate()
}

// maxWorkers bounds concurrency below PostgreSQL's default max_connections
// (100), leaving room for the sampler and the keepalive pool.
const maxWorkers = 64

func (o Options) validate() error {
	for _, w := range o.Workers {
		if w < 1 || w > maxWorkers {
			return optionErrorf("workers must be between 1 and %d, got %d", maxWorkers, w)
		}
	}
	if o.Duration < 10*time.Millisecond {
		return optionErrorf("duration %s is too short (at least 10ms)", o.Duration)
	}
	if o.Rounds < 1 {
		return optionErrorf("rounds must be at least 1")
	}
	if o.HotKeys < 1 {
		return optionErrorf("hot keys must be at least 1")
	}
	if o.TTL < time.Second {
		return optionErrorf("TTL %s is too short: leases must outlive a cycle (at least 1s)", o.TTL)
	}
	if o.RTT < 0 || o.RTT > time.Second {
		return optionErrorf("simulated round-trip time %s must be between 0 and 1s", o.RTT)
	}
	if o.KeepaliveLocks > 0 && (o.KeepaliveTTL < 3*time.Millisecond || o.KeepaliveFor <= 0) {
		return optionErrorf("keepalive TTL must be at least 3ms and its duration positive")
	}
	return nil
}
