package locker

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"log"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/lockctl/lockctl/store"
)

// Notifier LISTENs for releases on one dedicated connection and wakes the
// waiting Acquire calls of this process for the released key. LISTEN needs a
// session of its own (a pooled connection or a transaction would lose it), so
// the Notifier opens one with connect and reconnects when it breaks.
//
// LISTEN through a transaction pooler (PgBouncer's transaction mode)
// succeeds and then hears nothing. So a Notifier with a Probe proves
// delivery after every LISTEN: it sends a NOTIFY through Probe, the path
// releases take, and only once that arrives are wake-ups Live. If it does
// not arrive within ProbeTimeout, the Notifier logs one warning, and waiters
// wake at the holder's expiry and every Config.WaitRecheck instead.
type Notifier struct {
	cfg NotifierConfig

	state  atomic.Int32 // a WakeState
	warned atomic.Bool

	mu   sync.Mutex
	subs map[string]map[chan struct{}]struct{}
}

// NotifierConfig configures a Notifier.
type NotifierConfig struct {
	// Connect opens the connection LISTEN runs on: a direct one, or one
	// through a session-pooling pooler. Required.
	Connect func(ctx context.Context) (*pgx.Conn, error)
	// Probe is where the delivery probe's NOTIFY is sent: the pool the
	// service's releases go through. nil: no probe; wake-ups count as live
	// once LISTEN is in place.
	Probe DBTX
	// ProbeTimeout bounds the wait for the probe. Defaults to 5s.
	ProbeTimeout time.Duration
	// Logf receives the warning when a probe is not delivered. Defaults to
	// log.Printf.
	Logf func(format string, args ...any)
}

// NewNotifier returns a Notifier that connects with connect and sends no
// probe; start it with Run. ConnectWith(pool.Config().ConnConfig) suits
// most callers that connect directly to PostgreSQL.
func NewNotifier(connect func(ctx context.Context) (*pgx.Conn, error)) *Notifier {
	return NewNotifierWithConfig(NotifierConfig{Connect: connect})
}

// NewNotifierWithConfig returns a Notifier configured by cfg; start it with
// Run.
func NewNotifierWithConfig(cfg NotifierConfig) *Notifier {
	if cfg.ProbeTimeout <= 0 {
		cfg.ProbeTimeout = 5 * time.Second
	}
	if cfg.Logf == nil {
		cfg.Logf = log.Printf
	}
	return &Notifier{cfg: cfg, subs: map[string]map[chan struct{}]struct{}{}}
}

// WakeState is what a Notifier knows about the delivery of releases.
type WakeState int32

const (
	// WakeChecking: not listening yet (connecting, reconnecting), or the
	// probe is on its way.
	WakeChecking WakeState = iota
	// WakeLive: LISTEN is in place and, with a Probe, the probe arrived on
	// its connection: releases wake waiters.
	WakeLive
	// WakeNotLive: the probe did not arrive within ProbeTimeout, or could
	// not be sent: waiters wake at the holder's expiry and every
	// Config.WaitRecheck.
	WakeNotLive
)

// State reports what the Notifier knows about delivery now.
func (n *Notifier) State() WakeState { return WakeState(n.state.Load()) }

// Live reports whether releases wake waiters now (State is WakeLive).
func (n *Notifier) Live() bool { return n.State() == WakeLive }

func (n *Notifier) setState(s WakeState) { n.state.Store(int32(s)) }

// probeChannel carries the delivery probe, apart from the release channel
// so no key's waiters see it.
const probeChannel = store.NotifyChannel + "_probe"

// ConnectWith returns a connect function for NewNotifier that opens a new
// connection from cfg.
func ConnectWith(cfg *pgx.ConnConfig) func(ctx context.Context) (*pgx.Conn, error) {
	return func(ctx context.Context) (*pgx.Conn, error) {
		return pgx.ConnectConfig(ctx, cfg.Copy())
	}
}

// Run listens until ctx ends, reconnecting with backoff after errors. After
// every (re)connection it wakes all subscribers once: a release announced
// while it was not listening would otherwise be missed.
func (n *Notifier) Run(ctx context.Context) error {
	backoff := 100 * time.Millisecond
	for {
		err := n.listen(ctx)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if err == nil {
			backoff = 100 * time.Millisecond
		}
		n.wakeAll()
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(backoff):
		}
		backoff = min(backoff*2, 5*time.Second)
	}
}

func (n *Notifier) listen(ctx context.Context) error {
	conn, err := n.cfg.Connect(ctx)
	if err != nil {
		return err
	}
	defer n.setState(WakeChecking)
	defer conn.Close(context.WithoutCancel(ctx))
	for _, channel := range []string{store.NotifyChannel, probeChannel} {
		if _, err := conn.Exec(ctx, "LISTEN "+pgx.Identifier{channel}.Sanitize()); err != nil {
			return err
		}
	}
	n.wakeAll()
	probe, probeDeadline := "", time.Time{}
	if n.cfg.Probe == nil {
		n.setState(WakeLive)
	} else {
		probe, probeDeadline = newProbeID(), time.Now().Add(n.cfg.ProbeTimeout)
		if _, err := n.cfg.Probe.Exec(ctx, `SELECT pg_notify($1, $2)`, probeChannel, probe); err != nil && ctx.Err() == nil {
			n.setState(WakeNotLive)
			n.warn("could not send the probe NOTIFY: %v", err)
			probe = ""
		}
	}
	for {
		wctx, cancel := ctx, context.CancelFunc(func() {})
		if probe != "" {
			wctx, cancel = context.WithDeadline(ctx, probeDeadline)
		}
		note, err := conn.WaitForNotification(wctx)
		cancel()
		switch {
		case err != nil && probe != "" && ctx.Err() == nil && errors.Is(err, context.DeadlineExceeded):
			n.setState(WakeNotLive)
			n.warn("the probe NOTIFY sent through the pool did not arrive on the LISTEN connection within %s (is that connection behind a transaction pooler, or on another database? give it a direct or session-pooled connection)", n.cfg.ProbeTimeout)
			probe = ""
			continue
		case err != nil:
			return err
		case note.Channel == probeChannel:
			if note.Payload == probe {
				probe = ""
				n.setState(WakeLive)
			}
			continue
		}
		n.wake(note.Payload)
	}
}

// warn logs the first undelivered probe of this Notifier; later ones would
// say the same.
func (n *Notifier) warn(format string, args ...any) {
	if n.warned.CompareAndSwap(false, true) {
		n.cfg.Logf("locker: wake-ups on release are not live, waiters recheck on a timer: "+format, args...)
	}
}

func newProbeID() string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// subscribe returns a channel that receives a value when key may have been
// released, and a function to stop the subscription.
func (n *Notifier) subscribe(key string) (<-chan struct{}, func()) {
	ch := make(chan struct{}, 1)
	n.mu.Lock()
	if n.subs[key] == nil {
		n.subs[key] = map[chan struct{}]struct{}{}
	}
	n.subs[key][ch] = struct{}{}
	n.mu.Unlock()
	return ch, func() {
		n.mu.Lock()
		delete(n.subs[key], ch)
		if len(n.subs[key]) == 0 {
			delete(n.subs, key)
		}
		n.mu.Unlock()
	}
}

func (n *Notifier) wake(key string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	for ch := range n.subs[key] {
		signal(ch)
	}
}

func (n *Notifier) wakeAll() {
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, set := range n.subs {
		for ch := range set {
			signal(ch)
		}
	}
}

// signal never blocks: one pending wake-up is as good as many.
func signal(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}
