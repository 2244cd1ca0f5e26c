package locker

import (
	"encoding/json"
	"errors"
	"fmt"
	"github.com/lockctl/lockctl/internal/lockdb"
	"time"
)

// Config configures a Locker. The zero value is valid: every field has a
// documented default.
type Config struct {
	// TTL is the lease length of a Request or a renewal that names none,
	// and a session's. Defaults to 30s.
	TTL time.Duration
	// Actor is recorded on events. Defaults to the owner.
	Actor string
	// Notifier wakes waiting Acquire calls. nil: a waiter wakes at the
	// holder's expiry and every WaitRecheck.
	Notifier *Notifier
	// WaitRecheck bounds a waiter's sleep between checks when no Notifier
	// listens for it; its record lapses 3×WaitRecheck after its last
	// refresh. Defaults to 5s.
	WaitRecheck time.Duration
	// ClaimWindow is how long a lease handed to a waiter first runs (at
	// most the TTL; WaitRecheck more without a live Notifier), so a waiter
	// that died blocks the key that long at most; its Locker renews it after
	// half the window. Defaults to 2s.
	ClaimWindow time.Duration
	// Metadata is stored on every row granted. Defaults to host and pid.
	Metadata map[string]any
	// RenewEvery is how often a Keepalive renews. Defaults to TTL/3.
	RenewEvery time.Duration
	// SafetyMargin: a Keepalive stops trusting a lease it could not renew
	// this long before it ends. Defaults to TTL/10.
	SafetyMargin time.Duration
	// DurableRelease makes a Release that is its own transaction wait for
	// the disk: by default a release lost in a crash only means the lease
	// runs to its TTL. With synchronous standbys every release waits.
	DurableRelease bool
	// LogGrants records every grant and release as an event, not only
	// steals, forces and stale writes; it costs throughput (BENCHMARKS.md).
	LogGrants bool
}

// Locker takes, keeps and gives back leases. It holds configuration only, no
// connection: every method takes the DBTX to run on. Safe for concurrent use.
type Locker struct {
	cfg      Config
	metadata []byte // cfg.Metadata as JSON, encoded once
	clock    clock
	claims   *claims // background claims of handed-off leases
}

// New returns a Locker with cfg's defaults filled in.
func New(cfg Config) (*Locker, error) {
	if cfg.TTL == 0 {
		cfg.TTL = 30 * time.Second
	}
	if cfg.WaitRecheck == 0 {
		cfg.WaitRecheck = 5 * time.Second
	}
	if cfg.ClaimWindow == 0 {
		cfg.ClaimWindow = 2 * time.Second
	}
	if cfg.Metadata == nil {
		cfg.Metadata = defaultMetadata()
	}
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	metadata, err := json.Marshal(cfg.Metadata)
	if err == nil {
		err = lockdb.ValidJSON("metadata", metadata)
	}
	if err != nil {
		return nil, fmt.Errorf("locker: metadata: %w", err)
	}
	return &Locker{cfg: cfg, metadata: metadata, clock: realClock{}, claims: newClaims()}, nil
}

func (c Config) validate() error {
	if err := validTTL(c.TTL); err != nil {
		return err
	}
	if c.WaitRecheck < 0 || c.RenewEvery < 0 || c.SafetyMargin < 0 || c.ClaimWindow < 0 {
		return errors.New("locker: WaitRecheck, ClaimWindow, RenewEvery and SafetyMargin must not be negative")
	}
	if c.RenewEvery >= c.TTL {
		return fmt.Errorf("locker: RenewEvery %s must be shorter than TTL %s", c.RenewEvery, c.TTL)
	}
	if c.SafetyMargin >= c.TTL {
		return fmt.Errorf("locker: SafetyMargin %s must be shorter than TTL %s", c.SafetyMargin, c.TTL)
	}
	if c.Actor != "" {
		if err := lockdb.ValidateOwner(c.Actor); err != nil {
			return fmt.Errorf("locker: actor: %w", err)
		}
	}
	return nil
}

func validTTL(ttl time.Duration) error {
	if ttl < time.Millisecond || ttl > MaxTTL {
		return fmt.Errorf("%w: %s (must be between 1ms and %s)", errInvalidTTL, ttl, MaxTTL)
	}
	return nil
}

// claimWindow is the first lease of a hand-off of a lease of ttl to a
// waiter of l: ClaimWindow, at most ttl. A waiter with no Notifier
// listening learns of a hand-off only at its next check, up to WaitRecheck
// after it: its window is longer by that much, or the grant would run out
// before it looked.
func (l *Locker) claimWindow(ttl time.Duration) time.Duration {
	window := l.cfg.ClaimWindow
	if n := l.cfg.Notifier; n == nil || !n.Live() {
		window += l.cfg.WaitRecheck
	}
	return min(window, ttl)
}

// renewEvery is the renewal interval for a lease of ttl. It is always
// shorter than the trust window (ttl minus the safety margin): a Keepalive
// renewing less often would stop trusting its lease before it had tried.
func (l *Locker) renewEvery(ttl time.Duration) time.Duration {
	window := ttl - l.safetyMargin(ttl)
	if l.cfg.RenewEvery > 0 && l.cfg.RenewEvery < window {
		return l.cfg.RenewEvery
	}
	return min(ttl/3, window/2)
}

func (l *Locker) safetyMargin(ttl time.Duration) time.Duration {
	if l.cfg.SafetyMargin > 0 && l.cfg.SafetyMargin < ttl {
		return l.cfg.SafetyMargin
	}
	return ttl / 10
}

func (l *Locker) ownerActor(owner string) string {
	if l.cfg.Actor != "" {
		return l.cfg.Actor
	}
	return owner
}
