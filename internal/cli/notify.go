package cli

import (
	"context"
	"fmt"

	"github.com/charmbracelet/x/ansi"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/lockctl/lockctl/internal/lockdb"
	"github.com/lockctl/lockctl/locker"
)

// WakeUps is the console's wake-up indicator of n (tui.Options.WakeUps).
func WakeUps(n *locker.Notifier) func() (live, known bool) {
	return func() (bool, bool) { return n.Live(), !n.Checking() }
}

// StartNotifier runs a Notifier for a waiting command (or the console) until
// stop is called. It LISTENs on --notify-dsn, else on pool's server, and
// proves delivery with a probe sent through pool, the path releases take; if
// the probe is lost (LISTEN through a transaction pooler), it says so once on
// Stderr and the wait goes on with timed rechecks.
func StartNotifier(ctx context.Context, env Env, pool *pgxpool.Pool) (n *locker.Notifier, stop func(), err error) {
	listen := pool.Config().ConnConfig
	if env.NotifyDSN != "" {
		if listen, err = pgx.ParseConfig(env.NotifyDSN); err != nil {
			return nil, nil, scrubbed(usagef("invalid --notify-dsn: %w", err), env.secrets)
		}
		if listen.ConnectTimeout == 0 {
			listen.ConnectTimeout = ConnectTimeout
		}
	}
	n = locker.NewNotifier(locker.NotifierConfig{
		Connect: lockdb.ConnectWith(listen),
		Probe:   pool,
		Logf: func(format string, args ...any) {
			if _, tty := terminalWidth(env.Stderr); tty {
				// Clear the wait's progress line; it is redrawn within a second.
				fmt.Fprint(env.Stderr, "\r"+ansi.EraseEntireLine)
			}
			env.printLine(env.Prog + ": " + fmt.Sprintf(format, args...) + " (--notify-dsn)")
		},
	})
	nctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = n.Run(nctx) // returns when nctx ends; it reconnects on its own
	}()
	return n, func() { cancel(); <-done }, nil
}
