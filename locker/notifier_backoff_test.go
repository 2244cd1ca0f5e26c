package locker_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/lockctl/lockctl/internal/lockdb"
	"github.com/lockctl/lockctl/internal/testdb"
	"github.com/lockctl/lockctl/locker"
)

// connects records a Notifier's connection attempts and fails them on
// demand (a server down), connecting for real otherwise.
type connects struct {
	connect func(ctx context.Context) (*pgx.Conn, error)
	failing atomic.Bool

	mu       sync.Mutex
	attempts []time.Time
	pid      uint32 // the last connection made
}

func (c *connects) Connect(ctx context.Context) (*pgx.Conn, error) {
	c.mu.Lock()
	c.attempts = append(c.attempts, time.Now())
	c.mu.Unlock()
	if c.failing.Load() {
		return nil, errors.New("server down")
	}
	conn, err := c.connect(ctx)
	if err == nil {
		c.mu.Lock()
		c.pid = conn.PgConn().PID()
		c.mu.Unlock()
	}
	return conn, err
}

func (c *connects) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.attempts)
}

func (c *connects) at(i int) time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.attempts[i]
}

func (c *connects) kill(t *testing.T, db locker.DBTX) time.Time {
	t.Helper()
	c.mu.Lock()
	pid := c.pid
	c.mu.Unlock()
	if _, err := db.Exec(context.Background(), `SELECT pg_terminate_backend($1)`, pid); err != nil {
		t.Fatal(err)
	}
	return time.Now()
}

// After an outage the Notifier's reconnects back off; once a connection
// listened again, the next break is retried at the first step, not after
// the backoff the outage had reached (a failover after a switchover would
// otherwise leave the waiters without wake-ups for seconds).
func TestNotifierBackoffStartsAgainAfterAConnectionListened(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	c := &connects{connect: lockdb.ConnectWith(db.Config().ConnConfig)}
	n := locker.NewNotifier(locker.NotifierConfig{Connect: c.Connect})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = n.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	testdb.Eventually(t, 10*time.Second, "the Notifier listening", n.Live)

	// An outage: four failed attempts, each after a longer wait.
	c.failing.Store(true)
	before := c.count()
	c.kill(t, db)
	testdb.Eventually(t, 10*time.Second, "four failed reconnects", func() bool { return c.count() >= before+4 })
	c.failing.Store(false)
	testdb.Eventually(t, 10*time.Second, "the Notifier listening after the outage", n.Live)
	outageStep := c.at(before + 3).Sub(c.at(before + 2))

	before = c.count()
	broke := c.kill(t, db)
	testdb.Eventually(t, 10*time.Second, "a reconnect after the break", func() bool { return c.count() > before })
	if retry := c.at(before).Sub(broke); retry >= outageStep {
		t.Fatalf("first reconnect %s after a connection that listened broke; want the first step, well under the outage's %s",
			retry, outageStep)
	}
}
