package locker

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/lockctl/lockctl/internal/lockdb"
	"github.com/lockctl/lockctl/store"
)

// Request is what Acquire asks for: the Keys for Owner, all or none, each
// in its mode, for TTL, waiting up to Wait while they are held.
type Request struct {
	// Keys are 1 to MaxKeys distinct keys, each in its own mode (a set may
	// mix them: read config shared, write account:7), all or none.
	Keys []Key
	// Owner is who holds the leases (see NewOwnerID). Required.
	Owner string
	// TTL is the leases' length. Defaults to Config.TTL.
	TTL time.Duration
	// LockDelay (0 to MaxLockDelay; exclusive keys only) keeps a key from
	// everyone this long after its lease ends without a Release.
	LockDelay time.Duration
	// Wait: 0 makes one attempt; more waits in the keys' queues until
	// granted, Wait has passed or ctx ends; WaitForever as long as ctx.
	Wait time.Duration
	// AtLeast: a Release sooner after the grant keeps the keys until then
	// (state "kept"), as a scheduled job's once per period. Up to MaxTTL.
	AtLeast time.Duration
}

// Key is one key of a Request and the lease wanted on it.
type Key struct {
	Name string
	// Mode: ModeExclusive (or ""), ModeShared or ModeSemaphore.
	Mode string
	// Permits: a semaphore's, 1 to MaxPermits, fixed while the key is held.
	Permits int
}

// Keys are names as exclusive keys of a Request.
func Keys(names ...string) []Key {
	keys := make([]Key, len(names))
	for i, name := range names {
		keys[i] = Key{Name: name}
	}
	return keys
}

// WaitForever is the Request.Wait of an Acquire that waits until the keys
// are granted or ctx ends.
const WaitForever time.Duration = 1<<63 - 1

// Bounds of a Request.
const (
	MaxKeys      = 128                  // the database refuses larger sets too
	MaxPermits   = 1000                 // of a semaphore key
	MaxTTL       = 365 * 24 * time.Hour // far from interval overflow
	MaxLockDelay = 60 * time.Second     // as Consul bounds its own
)

// Modes of a key (Key.Mode, Lease.Mode).
const (
	ModeExclusive = lockdb.ModeExclusive // one holder
	ModeShared    = lockdb.ModeShared    // any number of holders
	ModeSemaphore = lockdb.ModeSemaphore // at most Permits holders
)

// grant is a Request made ready: its keys sorted (the order every
// statement locks them in), its defaults filled in.
type grant struct {
	keys      []string // sorted
	named     []string // as the Request named them
	owner     string
	ttl       time.Duration
	lockDelay time.Duration
	want      wanted   // the first key's mode: a single key's
	wants     []wanted // each key's, in keys' (sorted) order
	wait      time.Duration
	from      int64         // an upgrade's: the token of the owner's shared lease or permit it gives up
	atLeast   time.Duration // 0: none
}

// wanted is the lease an acquire asks for: the key itself (the zero
// value), a shared lease, or one of permits permits.
type wanted struct {
	shared  bool
	permits int
}

// prepare checks req before any SQL and fills in its defaults.
func (l *Locker) prepare(req Request) (grant, error) {
	g := grant{owner: req.Owner, ttl: req.TTL, lockDelay: req.LockDelay, wait: req.Wait, atLeast: req.AtLeast}
	if g.ttl == 0 {
		g.ttl = l.cfg.TTL
	}
	if len(req.Keys) == 0 || len(req.Keys) > MaxKeys {
		return g, fmt.Errorf("%w: %d keys (must be 1 to %d)", errInvalidKeys, len(req.Keys), MaxKeys)
	}
	for _, k := range req.Keys {
		if err := lockdb.ValidateKey(k.Name); err != nil {
			return g, err
		}
		g.named = append(g.named, k.Name)
	}
	g.keys = slices.Clone(g.named)
	slices.Sort(g.keys)
	for i := 1; i < len(g.keys); i++ {
		if g.keys[i] == g.keys[i-1] {
			return g, fmt.Errorf("%w: %q is named twice", errInvalidKeys, g.keys[i])
		}
	}
	byName := map[string]wanted{}
	for _, k := range req.Keys {
		w, err := wantOf(k)
		if err != nil {
			return g, err
		}
		byName[k.Name] = w
	}
	for _, k := range g.keys {
		g.wants = append(g.wants, byName[k])
	}
	g.want = byName[req.Keys[0].Name]
	switch {
	case lockdb.ValidateOwner(g.owner) != nil:
		return g, lockdb.ValidateOwner(g.owner)
	case validTTL(g.ttl) != nil:
		return g, validTTL(g.ttl)
	case g.lockDelay < 0 || g.lockDelay > MaxLockDelay:
		return g, fmt.Errorf("%w: %s (must be between 0 and %s)", errInvalidLockDelay, g.lockDelay, MaxLockDelay)
	case g.lockDelay > 0 && nonExclusive(req.Keys).Mode != "" && nonExclusive(req.Keys).Mode != ModeExclusive:
		return g, fmt.Errorf("%w: a %s lease carries none", errInvalidLockDelay, nonExclusive(req.Keys).Mode)
	case g.wait < 0:
		return g, fmt.Errorf("%w: Wait %s is negative", lockdb.ErrInvalid, g.wait)
	case g.atLeast != 0 && validTTL(g.atLeast) != nil:
		return g, fmt.Errorf("%w: %s (must be between 1ms and %s)", errInvalidAtLeast, g.atLeast, MaxTTL)
	case g.atLeast != 0 && g.want != (wanted{}):
		return g, fmt.Errorf("%w: a %s lease is not held at least a period", errInvalidAtLeast, req.Keys[0].Mode)
	}
	return g, nil
}

// modes are g's keys' leases as a key-set statement takes them
// (store.GrantParams.Modes), in g.keys' order: nil when all are exclusive.
func (g grant) modes() []store.KeyMode {
	modes := make([]store.KeyMode, len(g.wants))
	mixed := false
	for i, w := range g.wants {
		switch {
		case w.permits > 0:
			modes[i], mixed = store.KeyMode{Mode: ModeSemaphore, Permits: w.permits}, true
		case w.shared:
			modes[i], mixed = store.KeyMode{Mode: ModeShared}, true
		}
	}
	if !mixed {
		return nil
	}
	return modes
}

// stampAll gives each of leases, one per key in g.keys' order, its key's
// mode.
func (g grant) stampAll(leases []Lease) []Lease {
	for i := range leases {
		leases[i], _ = g.wants[i].stamp(leases[i], nil)
	}
	return leases
}

// wantOf is the lease k asks for.
func wantOf(k Key) (wanted, error) {
	switch {
	case k.Mode == ModeSemaphore && (k.Permits < 1 || k.Permits > MaxPermits):
		return wanted{}, fmt.Errorf("%w: %d for %q, want 1 to %d", errInvalidPermits, k.Permits, k.Name, MaxPermits)
	case k.Mode == ModeSemaphore:
		return wanted{permits: k.Permits}, nil
	case k.Permits != 0:
		return wanted{}, fmt.Errorf("%w: %d for %q, whose mode is not %s", errInvalidPermits, k.Permits, k.Name, ModeSemaphore)
	case k.Mode == ModeShared:
		return wanted{shared: true}, nil
	case k.Mode == "" || k.Mode == ModeExclusive:
		return wanted{}, nil
	}
	return wanted{}, fmt.Errorf("%w: %q for %q (want %s, %s or %s)", errInvalidMode, k.Mode, k.Name, ModeExclusive, ModeShared, ModeSemaphore)
}

// nonExclusive is the first key of keys not asked for exclusively.
func nonExclusive(keys []Key) Key {
	for _, k := range keys {
		if k.Mode != "" && k.Mode != ModeExclusive {
			return k
		}
	}
	return keys[0]
}

// Acquire takes every key of req for req.Owner, all or none, and returns
// one Lease per key in req's order, each Acquired (new or free row), Stolen
// (another owner's expired lease) or Renewed (the owner held it already:
// same token, later expiry).
//
// With Wait 0 it makes one attempt in one statement, which may be part of
// the caller's transaction (READ COMMITTED): a key held by another owner, in
// its lock-delay, or promised to waiters is refused with ErrHeld, and
// nothing is held. With Wait it queues, first come first served, until
// granted, Wait has passed or ctx ends (then ErrHeld, wrapping ctx's
// error); a wait that would close a cycle of waits is refused with
// ErrDeadlock. Wait on a pool or a connection, not in a transaction. A bad
// request is refused with ErrInvalid before anything is sent.
func (l *Locker) Acquire(ctx context.Context, db DBTX, req Request) ([]Lease, error) {
	g, err := l.prepare(req)
	if err != nil {
		return nil, fmt.Errorf("locker: acquire: %w", err)
	}
	if g.wait > 0 && g.wait < WaitForever {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, g.wait)
		defer cancel()
	}
	var leases []Lease
	switch {
	case len(g.keys) > 1 && g.wait == 0:
		leases, err = l.tryAll(ctx, db, g)
	case len(g.keys) > 1:
		leases, err = l.waitAll(ctx, db, g)
	default:
		var lease Lease
		switch {
		case g.wait > 0:
			lease, err = l.waitOne(ctx, db, g)
		case g.want != (wanted{}):
			lease, err = l.tryShared(ctx, db, g)
		default:
			lease, err = l.tryOne(ctx, db, g)
		}
		leases = []Lease{lease}
	}
	if err != nil {
		return nil, err
	}
	if err := l.holdAtLeast(ctx, db, g, leases); err != nil {
		return nil, err
	}
	return inKeyOrder(g.named, leases), nil
}
