package locker

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"log"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/lockctl/lockctl/store"
)

// Notifier serves this process's waiting Acquire calls on one connection of
// its own: it LISTENs on a channel of its own, which their waiter records
// name, gives each hand-off to the waiter it was made for, and keeps all of
// their records live with one heartbeat statement per interval. Its
// connection must use the lock schema of the pool its waiters queue
// through; one Notifier per lock schema. LISTEN through a transaction pooler
// hears nothing: with a Probe it proves delivery after every LISTEN, and
// until it does waiters wake at the holder's expiry and every
// Config.WaitRecheck.
type Notifier struct {
	cfg     NotifierConfig
	channel string // the wake channel this process's waiter records name

	state  atomic.Int32 // a wakeState
	warned atomic.Bool
	// probeDeadline is when delivery must have been proven (the first
	// probe's send plus ProbeTimeout), kept across reconnects: a LISTEN
	// connection a pooler keeps breaking would otherwise start its wait
	// anew each time and never warn. Zero until a probe is sent, and again
	// once wake-ups are live. Only Run's goroutine touches it.
	probeDeadline time.Time

	mu     sync.Mutex
	subs   map[string]map[*waiting]struct{} // by key
	schema string                           // the LISTEN connection's lock schema

	// heard, when set (by tests, before Run), sees every notification the
	// LISTEN connection receives, before it is read.
	heard func(*pgconn.Notification)
}

// waiting is one queued Acquire's subscription.
type waiting struct {
	id      int64         // waiter record
	seenFor time.Duration // how long a heartbeat keeps the record live
	wake    chan struct{} // check the queue: a hand-off may have been missed
	// handoff: a NOTIFY named this waiter as handed the key. Anyone may
	// send one, so it is a reason to claim (store.Claim), never the grant.
	handoff chan struct{}
	// missing: the database's heartbeat did not find this waiter's record
	// live: it was handed the key (its NOTIFY may be on its way, or lost)
	// or the record is gone. The database said so, so the waiter claims at
	// once and, when nothing was handed to it, checks.
	missing chan struct{}
	// expiresAt is when (local Unix ns) the key's latest lease, handed to
	// another waiter, ends at the latest: the end of its claim window unless
	// claimed. retime wakes the waiter only when that is earlier than
	// sleepUntil, the end of its current sleep (a waiter sleeping on a long
	// lease must wake at a claim window's end); otherwise it learns the new
	// end when its sleep ends, with no statement.
	retime     chan struct{}
	expiresAt  atomic.Int64
	sleepUntil atomic.Int64
	// early are the waiter ids of hand-offs of the key seen before id was
	// known (0 until then), one of which may be this waiter's; at most
	// maxEarly.
	early []int64
}

// maxEarly bounds the hand-offs kept for a waiter whose enqueue is in
// flight: more hand-offs than that in one round trip means it was not the
// head anyway, and its own check finds the grant.
const maxEarly = 64

// NotifierConfig configures a Notifier.
type NotifierConfig struct {
	// Connect opens the LISTEN connection (direct, or session-pooled); required.
	Connect func(ctx context.Context) (*pgx.Conn, error)
	// Probe: where the delivery probe goes (the pool releases use); nil: none.
	Probe DBTX
	// ProbeTimeout bounds the wait for the probes. Defaults to 5s.
	ProbeTimeout time.Duration
	// Logf gets the warning of a lost probe. Defaults to log.Printf.
	Logf func(format string, args ...any)
}

// NewNotifier returns a Notifier configured by cfg; start it with Run.
func NewNotifier(cfg NotifierConfig) *Notifier {
	if cfg.ProbeTimeout <= 0 {
		cfg.ProbeTimeout = 5 * time.Second
	}
	if cfg.Logf == nil {
		cfg.Logf = log.Printf
	}
	return &Notifier{cfg: cfg, channel: store.NewWakeChannel(), subs: map[string]map[*waiting]struct{}{}}
}

// wakeState is what a Notifier knows about the delivery of releases.
type wakeState int32

const (
	// wakeChecking: not listening yet (connecting, reconnecting), or the
	// probe is on its way.
	wakeChecking wakeState = iota
	// wakeLive: LISTEN is in place and, with a Probe, two probes, each sent
	// after a heartbeat of its own, arrived on its connection between
	// statements (a pooler may pass one on by chance): releases wake
	// waiters.
	wakeLive
	// wakeNotLive: the probe did not arrive within ProbeTimeout, or could
	// not be sent: waiters wake at the holder's expiry and every
	// Config.WaitRecheck.
	wakeNotLive
)

// Live reports whether releases wake waiters now: LISTEN is in place and,
// with a Probe, probes sent through it arrived.
func (n *Notifier) Live() bool { return wakeState(n.state.Load()) == wakeLive }

// Checking reports whether the Notifier is still finding out whether
// releases reach it.
func (n *Notifier) Checking() bool { return wakeState(n.state.Load()) == wakeChecking }

func (n *Notifier) setState(s wakeState) { n.state.Store(int32(s)) }

// probePrefix starts a delivery probe's payload, sent on the Notifier's own
// channel (so it proves the path its hand-offs take, and no other process
// hears it); every other payload there is a JSON object.
const probePrefix = "probe:"

// probesToHear is how many delivery probes must arrive, each sent after a
// heartbeat of its own, before wake-ups count as live.
const probesToHear = 2

// Run listens until ctx ends, reconnecting with backoff, and wakes every
// waiter after each (re)connection.
func (n *Notifier) Run(ctx context.Context) error {
	backoff := minBackoff
	for {
		listened := n.listen(ctx)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if listened {
			// The connection worked until now: a failover's first retry
			// must not wait out the backoff of an earlier outage.
			backoff = minBackoff
		}
		n.wakeAll()
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(backoff):
		}
		backoff = min(backoff*2, maxBackoff)
	}
}

// The reconnect backoff doubles from minBackoff up to maxBackoff while
// connections fail, and starts again after one that listened.
const (
	minBackoff = 100 * time.Millisecond
	maxBackoff = 5 * time.Second
)

// listen runs one connection until it breaks or ctx ends, and reports
// whether its LISTEN was in place.
func (n *Notifier) listen(ctx context.Context) (listened bool) {
	conn, err := n.cfg.Connect(ctx)
	if err != nil {
		return listened
	}
	defer n.setState(wakeChecking)
	defer conn.Close(context.WithoutCancel(ctx))
	// Hand-offs name their lock schema; this connection's is the one its
	// waiters queue in (connect as the pool does: same search_path).
	var schema string
	if err := conn.QueryRow(ctx, `SELECT current_schema()`).Scan(&schema); err != nil {
		return listened
	}
	n.mu.Lock()
	n.schema = schema
	n.mu.Unlock()
	if _, err := conn.Exec(ctx, "LISTEN "+pgx.Identifier{n.channel}.Sanitize()); err != nil {
		return listened
	}
	listened = true
	n.wakeAll()
	// The probe counts only when it was sent after this connection's last
	// statement and arrives before its next. Through a transaction pooler
	// the connection reaches a server only during its own statements (the
	// heartbeat): a NOTIFY committed meanwhile can reach it then by chance,
	// even just after the statement's result (the server sends it as soon
	// as it is idle, and the pooler may pass it on with the result). So a
	// probe still out when a statement runs is sent again, with a new id.
	// Even so a pooler can deliver one by chance, so wake-ups count as live
	// only once probesToHear probes, each sent after another heartbeat,
	// have arrived.
	probe := ""
	sendProbe := n.cfg.Probe != nil
	heard, reprobe := 0, false
	if !sendProbe {
		n.setState(wakeLive)
	}
	nextBeat := time.Now()
	for {
		if !time.Now().Before(nextBeat) {
			every, err := n.heartbeat(ctx, conn)
			if err != nil {
				return listened
			}
			nextBeat = time.Now().Add(every)
			n.dispatchBuffered(conn)
			if probe != "" || reprobe {
				sendProbe, reprobe = true, false
			}
		}
		if sendProbe {
			sendProbe = false
			if n.probeDeadline.IsZero() {
				n.probeDeadline = time.Now().Add(n.cfg.ProbeTimeout)
			}
			probe = probePrefix + newProbeID()
			if _, err := n.cfg.Probe.Exec(ctx, `SELECT pg_notify($1, $2)`, n.channel, probe); err != nil && ctx.Err() == nil {
				n.setState(wakeNotLive)
				n.warn("could not send the probe NOTIFY: %v", err)
				probe = ""
			}
		}
		deadline := nextBeat
		if probe != "" && n.probeDeadline.Before(deadline) {
			deadline = n.probeDeadline
		}
		wctx, cancel := context.WithDeadline(ctx, deadline)
		note, err := conn.WaitForNotification(wctx)
		cancel()
		n.hear(note)
		switch {
		case err != nil && ctx.Err() == nil && pgconn.Timeout(err) && !conn.IsClosed():
			if probe != "" && !time.Now().Before(n.probeDeadline) {
				n.setState(wakeNotLive)
				n.warn("the probe NOTIFY sent through the pool did not arrive on the LISTEN connection within %s (is that connection behind a transaction pooler, or on another database? give it a direct or session-pooled connection)", n.cfg.ProbeTimeout)
				probe = ""
			}
			continue // time for the heartbeat, or the probe's deadline
		case err != nil:
			return listened
		case strings.HasPrefix(note.Payload, probePrefix):
			if note.Payload == probe {
				probe = ""
				if heard++; heard >= probesToHear {
					n.setState(wakeLive)
					n.probeDeadline = time.Time{}
				} else {
					// The next probe after a heartbeat run now, not at its
					// time, which may be later than ProbeTimeout.
					reprobe, nextBeat = true, time.Now()
				}
			}
			continue
		}
		n.dispatch(note)
	}
}

// dispatchBuffered dispatches the notifications conn received during a
// statement. Probes among them are dropped: one heard during a statement
// proves nothing (see listen).
func (n *Notifier) dispatchBuffered(conn *pgx.Conn) {
	done, cancel := context.WithCancel(context.Background())
	cancel() // only what is already buffered; nothing is read from the server
	for {
		note, _ := conn.WaitForNotification(done)
		n.hear(note)
		switch {
		case note == nil:
			return
		case !strings.HasPrefix(note.Payload, probePrefix):
			n.dispatch(note)
		}
	}
}

func (n *Notifier) hear(note *pgconn.Notification) {
	if note != nil && n.heard != nil {
		n.heard(note)
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

// minHeartbeat bounds how often the heartbeat runs, however short a
// waiter's seenFor; idleHeartbeat is how often an idle Notifier looks for
// waiters to keep live (no statement when there are none).
const (
	minHeartbeat  = 50 * time.Millisecond
	idleHeartbeat = 100 * time.Millisecond
)

// heartbeat refreshes every waiter record of this process in one statement
// and wakes the waiters whose record it did not find (handed a lease whose
// NOTIFY they may have missed, or gone) or found at the head of a key nobody
// holds (the process the hand-off before told may have died with its
// waiter). It returns when to beat next.
func (n *Notifier) heartbeat(ctx context.Context, conn *pgx.Conn) (time.Duration, error) {
	n.mu.Lock()
	var ids []int64
	seenFor := time.Duration(0)
	for _, set := range n.subs {
		for w := range set {
			if w.id > 0 {
				ids = append(ids, w.id)
				seenFor = max(seenFor, w.seenFor)
			}
		}
	}
	n.mu.Unlock()
	if len(ids) == 0 {
		// Look again soon: a waiter subscribing now needs its first
		// heartbeat within its seenFor.
		return idleHeartbeat, nil
	}
	missing, err := store.Heartbeat(ctx, conn, ids, seenFor)
	if err != nil {
		return 0, err
	}
	n.mu.Lock()
	for _, id := range missing {
		for _, set := range n.subs {
			for w := range set {
				if w.id == id {
					signal(w.missing)
				}
			}
		}
	}
	n.mu.Unlock()
	return max(seenFor/6, minHeartbeat), nil
}

func (n *Notifier) dispatch(note *pgconn.Notification) {
	h, err := store.ParseWake(note.Payload)
	if err != nil {
		return // not ours to read; the waiters' own checks cover it
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if h.Schema != n.schema {
		return // another lock namespace in the same database
	}
	if h.WaiterID == 0 {
		// A release or operator action with no queued waiter to hand to:
		// the key's waiters check.
		for w := range n.subs[h.Key] {
			signal(w.wake)
		}
		return
	}
	// A hand-off, to one of this process's waiters, or to another waiter
	// while one of this process's is first in line: hints, since any role
	// may NOTIFY. The one named claims (and so learns from the database
	// whether it was handed anything); the others may wake sooner, when the
	// new lease's claim window ends, as measured from now (it was granted
	// before the NOTIFY arrived), and then check.
	ends := time.Now().Add(h.Row().ExpiresAt.Sub(h.AcquiredAt())).UnixNano()
	for w := range n.subs[h.Key] {
		if w.id == 0 {
			if len(w.early) < maxEarly {
				w.early = append(w.early, h.WaiterID)
			}
			continue
		}
		if w.id == h.WaiterID {
			signal(w.handoff)
			continue
		}
		w.expiresAt.Store(ends)
		if ends < w.sleepUntil.Load() {
			signal(w.retime)
		}
	}
}

// await subscribes a waiter on key before it enqueues (so no hand-off can
// come before the subscription); call queued with its waiter id once it is
// queued. Hand-offs to it arrive on the waiting's handoff channel, reasons
// to check on its wake channel. Call the function returned when done.
func (n *Notifier) await(key string, seenFor time.Duration) (*waiting, func()) {
	w := &waiting{seenFor: seenFor, wake: make(chan struct{}, 1),
		handoff: make(chan struct{}, 1), missing: make(chan struct{}, 1), retime: make(chan struct{}, 1)}
	n.mu.Lock()
	if n.subs[key] == nil {
		n.subs[key] = map[*waiting]struct{}{}
	}
	n.subs[key][w] = struct{}{}
	n.mu.Unlock()
	return w, func() {
		n.mu.Lock()
		delete(n.subs[key], w)
		if len(n.subs[key]) == 0 {
			delete(n.subs, key)
		}
		n.mu.Unlock()
	}
}

// queued gives w its waiter id and delivers a hand-off to it that arrived
// while its enqueue was in flight.
func (n *Notifier) queued(w *waiting, id int64) {
	n.mu.Lock()
	defer n.mu.Unlock()
	w.id = id
	if slices.Contains(w.early, id) {
		signal(w.handoff)
	}
	w.early = nil
}

func (n *Notifier) wakeAll() {
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, set := range n.subs {
		for w := range set {
			signal(w.wake)
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
