package locker

import (
	"context"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/lockctl/lockctl/store"
)

// Notifier LISTENs for releases on one dedicated connection and wakes the
// waiting Acquire calls of this process for the released key. LISTEN needs a
// session of its own (a pooled connection or a transaction would lose it), so
// the Notifier opens one with connect and reconnects when it breaks.
type Notifier struct {
	connect func(ctx context.Context) (*pgx.Conn, error)

	mu   sync.Mutex
	subs map[string]map[chan struct{}]struct{}
}

// NewNotifier returns a Notifier that connects with connect; start it with
// Run. ConnectWith(pool.Config().ConnConfig) suits most callers.
func NewNotifier(connect func(ctx context.Context) (*pgx.Conn, error)) *Notifier {
	return &Notifier{connect: connect, subs: map[string]map[chan struct{}]struct{}{}}
}

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
	conn, err := n.connect(ctx)
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if _, err := conn.Exec(ctx, "LISTEN "+pgx.Identifier{store.NotifyChannel}.Sanitize()); err != nil {
		return err
	}
	n.wakeAll()
	for {
		note, err := conn.WaitForNotification(ctx)
		if err != nil {
			return err
		}
		n.wake(note.Payload)
	}
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
