package workload

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/lockctl/lockctl/internal/lockdb"
	"github.com/lockctl/lockctl/internal/testdb"
	"github.com/lockctl/lockctl/locker"
)

// StartNotifier runs a Notifier that listens on connections from cfg until
// the test ends, and returns once it is listening: a release made after
// that wakes its waiters.
func StartNotifier(t testing.TB, cfg *pgx.ConnConfig) *locker.Notifier {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	n := locker.NewNotifier(locker.NotifierConfig{Connect: lockdb.ConnectWith(cfg)})
	done := make(chan struct{})
	go func() { _ = n.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	testdb.Eventually(t, 10*time.Second, "the notifier listening", n.Live)
	return n
}
