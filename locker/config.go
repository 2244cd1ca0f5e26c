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
	// TTL is the lease length of acquisitions and renewals. Defaults to 30s.
	TTL time.Duration
	// Actor is recorded on events this Locker causes. Defaults to the owner
	// id of each operation.
	Actor string
	// Notifier wakes waiting Acquire calls when a key is released. nil: a
	// waiter wakes at the holder's expiry and every WaitRecheck.
	Notifier *Notifier
	// WaitRecheck bounds how long a waiting Acquire sleeps before it checks
	// its place in the queue (and refreshes its waiter record) when no
	// Notifier is listening for it. Defaults to 5s. A waiter record lapses
	// 3×WaitRecheck after its last refresh.
	WaitRecheck time.Duration
	// ClaimWindow is how long a lease handed to a queued waiter first runs
	// (at most TTL): if the waiter died after its last heartbeat, the key
	// is blocked that long at most before the next waiter gets it. The
	// waiter's Locker renews it to the full TTL (the claim) after half the
	// window if it still holds it. Defaults to 2s. A waiter with no
	// Notifier listening, which finds a hand-off only at its next check,
	// asks for WaitRecheck more (still at most TTL).
	ClaimWindow time.Duration
	// Metadata is stored on every lock row this Locker grants (the console
	// shows it). Defaults to {"host": hostname, "pid": pid}.
	Metadata map[string]any
	// RenewEvery is how often a Keepalive renews. Defaults to TTL/3. A
	// value not shorter than the trust window (TTL − SafetyMargin) could
	// not keep a lease, so the default is used instead (or half the window,
	// if that is shorter).
	RenewEvery time.Duration
	// SafetyMargin is subtracted from a lease's expiry to get the moment a
	// Keepalive stops trusting a lease it could not renew. Defaults to TTL/10.
	SafetyMargin time.Duration
	// DurableRelease makes Release wait for its commit to reach disk, as
	// every other write does. By default a Release that runs as its own
	// transaction (on a pool or a connection, not inside the caller's
	// transaction) does not wait: a release lost in a database crash only
	// means the lease expires at its TTL instead of at once, and never
	// lets two owners hold a key. Set it when a crash must not bring back
	// a released lease until its expiry. On a server with synchronous
	// standbys every release waits as if it were set (for the standby, as
	// synchronous_commit says), so a failover cannot bring it back either.
	DurableRelease bool
	// LogGrants records every grant and release in distributed_lock_event,
	// not only what an operator has to be able to explain later: steals,
	// force-expire and force-release, rejected stale writes (always
	// recorded). Off by default because two extra rows per acquire/release
	// cycle, and the full grant statement they need, cut a busy service's
	// lock throughput (BENCHMARKS.md, locker-logged). The
	// console, the CLI and the demo turn it on; a service can while it is
	// being debugged.
	LogGrants bool
	// LockDelay is the lock-delay of the leases this Locker grants: when
	// one ends without its holder's release (it expires, or an operator
	// force-expires or force-releases it), nobody is granted the key until
	// LockDelay has passed, so a holder that was only slow, and may still
	// be writing to a resource that cannot check fencing tokens, has that
	// long to notice. A clean release starts none. Waiters keep their
	// place and are served when it ends; an operator can end it early
	// (Locker.EndDelay). Defaults to 0 (no delay). At most MaxLockDelay;
	// outside 0…MaxLockDelay New returns errInvalidLockDelay. It applies to
	// exclusive leases only: a shared lease or a permit carries none (a
	// permit's slot is granted again as soon as its lease ends).
	LockDelay time.Duration
}

// MaxLockDelay bounds Config.LockDelay, as Consul bounds its own: a key
// whose holder died is idle that long at most after its lease ends.
const MaxLockDelay = 60 * time.Second

// Locker takes, keeps and gives back leases. It holds configuration only, no
// connection: every method takes the DBTX to run on. Safe for concurrent use.
type Locker struct {
	cfg      Config
	metadata []byte // cfg.Metadata as JSON, encoded once
	clock    clock
	claims   *claims // background claims of handed-off leases, shared by WithTTL copies
}

// DefaultClaimWindow is Config.ClaimWindow's default.
const DefaultClaimWindow = 2 * time.Second

// New returns a Locker with cfg's defaults filled in.
func New(cfg Config) (*Locker, error) {
	if cfg.TTL == 0 {
		cfg.TTL = 30 * time.Second
	}
	if cfg.WaitRecheck == 0 {
		cfg.WaitRecheck = 5 * time.Second
	}
	if cfg.ClaimWindow == 0 {
		cfg.ClaimWindow = DefaultClaimWindow
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
	if c.LockDelay < 0 || c.LockDelay > MaxLockDelay {
		return fmt.Errorf("%w: %s (must be between 0 and %s)", errInvalidLockDelay, c.LockDelay, MaxLockDelay)
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

// MaxTTL bounds a lease: a year is more than any sane lease and keeps
// interval arithmetic far from overflow.
const MaxTTL = 365 * 24 * time.Hour

func validTTL(ttl time.Duration) error {
	if ttl < time.Millisecond || ttl > MaxTTL {
		return fmt.Errorf("%w: %s (must be between 1ms and %s)", errInvalidTTL, ttl, MaxTTL)
	}
	return nil
}

// TTL is the lease length this Locker grants.
func (l *Locker) TTL() time.Duration { return l.cfg.TTL }

// WithTTL returns a copy of l that grants leases of ttl.
func (l *Locker) WithTTL(ttl time.Duration) (*Locker, error) {
	cfg := l.cfg
	cfg.TTL = ttl
	if cfg.RenewEvery >= ttl {
		cfg.RenewEvery = 0
	}
	if cfg.SafetyMargin >= ttl {
		cfg.SafetyMargin = 0
	}
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	metadata, err := json.Marshal(cfg.Metadata)
	if err != nil {
		return nil, fmt.Errorf("locker: metadata: %w", err)
	}
	return &Locker{cfg: cfg, metadata: metadata, clock: l.clock, claims: l.claims}, nil
}

// claimWindow is the first lease of a hand-off to a waiter of l:
// ClaimWindow, at most TTL. A waiter with no Notifier listening learns of a
// hand-off only at its next check, up to WaitRecheck after it: its window
// is longer by that much, or the grant would run out before it looked.
func (l *Locker) claimWindow() time.Duration {
	window := l.cfg.ClaimWindow
	if n := l.cfg.Notifier; n == nil || !n.Live() {
		window += l.cfg.WaitRecheck
	}
	return min(window, l.cfg.TTL)
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
