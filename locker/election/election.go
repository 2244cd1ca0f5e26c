package election

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/lockctl/lockctl/locker"
	"github.com/lockctl/lockctl/store"
)

// ErrNoLeader: nobody leads the key.
var ErrNoLeader = errors.New("no leader")

// Config configures an Election. The zero value is valid but for Owner's
// and Listen's defaults.
type Config struct {
	// Locker configures the candidate's leases: TTL (how long a dead leader
	// keeps the key), Notifier (a Resign's hand-off wakes the next
	// candidate at once), WaitRecheck. Its Metadata is replaced by the
	// election's.
	Locker locker.Config
	// Owner is this candidate. Defaults to locker.NewOwnerID().
	Owner string
	// Listen opens the connection Observe LISTENs on (direct, or
	// session-pooled). nil: Observe reads at the leader's expiry and every
	// Recheck only.
	Listen func(ctx context.Context) (*pgx.Conn, error)
	// Recheck bounds Observe's sleep between reads. Defaults to 5s.
	Recheck time.Duration
}

// Leader is a key's leader.
type Leader struct {
	Key   string
	Owner string
	Value string
	Term  int64 // the lease's fencing token
	// ExpiresAt is when the leader's lease ends unless renewed (database
	// clock); Remaining is how long it still ran when read.
	ExpiresAt time.Time
	Remaining time.Duration
}

// Election is one candidate for one key, and an observer of it.
type Election struct {
	db  locker.DBTX
	key string
	cfg Config

	mu   sync.Mutex
	lk   *locker.Locker
	ka   *locker.Keepalive // while leading
	won  locker.Lease      // the lease Campaign won
	term int64
	lead context.Context // the last leadership's: ended once lost or resigned
}

// New returns the election of key on db (a pool: a leader's keepalive and
// the candidates' waits run on it).
func New(db locker.DBTX, key string, cfg Config) (*Election, error) {
	if cfg.Owner == "" {
		cfg.Owner = locker.NewOwnerID()
	}
	if cfg.Recheck <= 0 {
		cfg.Recheck = 5 * time.Second
	}
	if key == "" {
		return nil, fmt.Errorf("election: empty key: %w", locker.ErrInvalid)
	}
	return &Election{db: db, key: key, cfg: cfg}, nil
}

// Key is the election's key; Owner, this candidate.
func (e *Election) Key() string   { return e.key }
func (e *Election) Owner() string { return e.cfg.Owner }

// Campaign waits until this candidate leads, with value proclaimed, and
// returns its term. It keeps the lease alive until Resign; Context ends
// when leadership is lost. A ctx that ends first leaves the queue.
func (e *Election) Campaign(ctx context.Context, value string) (int64, error) {
	cfg := e.cfg.Locker
	cfg.Metadata = metadata(value)
	lk, err := locker.New(cfg)
	if err != nil {
		return 0, fmt.Errorf("election: %w", err)
	}
	leases, err := lk.Acquire(ctx, e.db, locker.Request{Keys: locker.Keys(e.key), Owner: e.cfg.Owner, Wait: locker.WaitForever})
	if err != nil {
		return 0, fmt.Errorf("election: campaign %q: %w", e.key, err)
	}
	ka := lk.Keepalive(context.Background(), e.db, leases...)
	e.mu.Lock()
	e.lk, e.ka, e.won, e.term, e.lead = lk, ka, leases[0], leases[0].Token, ka.Context()
	e.mu.Unlock()
	// Proclaiming tells observers of the new term (and sets the value on a
	// lease this owner already held).
	if err := e.Proclaim(ctx, value); err != nil {
		return 0, err
	}
	return leases[0].Token, nil
}

// Context ends when the leadership Campaign won is lost or resigned;
// nil before Campaign returns.
func (e *Election) Context() context.Context {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.lead
}

// Proclaim sets the leader's value without an election. Refused with an
// error matching locker.ErrNotHeld unless this candidate still leads.
func (e *Election) Proclaim(ctx context.Context, value string) error {
	e.mu.Lock()
	term := e.term
	e.mu.Unlock()
	var ok bool
	if term != 0 {
		if err := e.db.QueryRow(ctx, proclaimSQL, e.key, e.cfg.Owner, term, value).Scan(&ok); err != nil {
			return fmt.Errorf("election: proclaim %q: %w", e.key, store.Interpret(err))
		}
	}
	if !ok {
		return &locker.Error{Kind: locker.ErrNotHeld, Key: e.key, Owner: e.cfg.Owner, Token: term}
	}
	return nil
}

const proclaimSQL = `SELECT distributed_lock_proclaim($1, $2, $3, to_jsonb($4::text))`

// Resign gives leadership up: the release hands the key to the next
// candidate queued, at once. A candidate that never led, or resigned, does
// nothing; one whose leadership was lost meanwhile gets an error matching
// locker.ErrNotHeld.
func (e *Election) Resign(ctx context.Context) error {
	e.mu.Lock()
	lk, ka := e.lk, e.ka
	e.lk, e.ka, e.term = nil, nil, 0
	e.mu.Unlock()
	if ka == nil {
		return nil
	}
	ka.Stop()
	if _, err := lk.Release(ctx, e.db, ka.Leases()...); err != nil {
		return fmt.Errorf("election: resign %q: %w", e.key, err)
	}
	return nil
}

// Lease is the lease of the leadership Campaign won while this candidate
// has not resigned: its Outcome as granted (Stolen: from a leader whose
// lease ended unreleased), its expiry and ValidFor as last renewed. Pass it
// to locker.Fence inside the transaction of a leader's writes, so they
// commit only while it leads.
func (e *Election) Lease() (locker.Lease, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.ka == nil {
		return locker.Lease{}, false
	}
	l := e.ka.Leases()[0]
	l.Outcome = e.won.Outcome
	return l, true
}

// Leader reads the key's leader; ErrNoLeader when nobody leads.
func (e *Election) Leader(ctx context.Context) (Leader, error) {
	return Read(ctx, e.db, e.key)
}

// Read reads key's leader on db; ErrNoLeader when nobody leads.
func Read(ctx context.Context, db locker.DBTX, key string) (Leader, error) {
	var l Leader
	var now time.Time
	err := db.QueryRow(ctx, leaderSQL, key).Scan(&l.Owner, &l.Term, &l.Value, &l.ExpiresAt, &now)
	if errors.Is(err, pgx.ErrNoRows) {
		return Leader{}, fmt.Errorf("election: %q: %w", key, ErrNoLeader)
	}
	if err != nil {
		return Leader{}, fmt.Errorf("election: leader of %q: %w", key, store.Interpret(err))
	}
	l.Key, l.Remaining = key, l.ExpiresAt.Sub(now)
	return l, nil
}

const leaderSQL = `SELECT owner_id, term, coalesce(value #>> '{}', ''), expires_at, now FROM distributed_lock_leader($1)`

func metadata(value string) map[string]any {
	return map[string]any{"election": true, "value": value}
}
