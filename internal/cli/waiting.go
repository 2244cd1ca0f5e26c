package cli

import (
	"context"
	"fmt"
	"time"

	"github.com/charmbracelet/x/ansi"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/lockctl/lockctl/internal/lockdb"
	"github.com/lockctl/lockctl/internal/textsafe"
	"github.com/lockctl/lockctl/locker"
	"github.com/lockctl/lockctl/store"
)

// waitForLease waits in opts.Key's queue (lk.Acquire, in opts'
// mode) for at most opts.Wait, with a Notifier (on
// --notify-dsn, if given; see StartNotifier) so a release wakes it at once
// rather than at the next recheck. While it waits, a terminal on Stderr
// shows one progress line (see showWaitProgress).
func waitForLease(ctx context.Context, env Env, pool *pgxpool.Pool, cfg locker.Config, opts AcquireOptions) (locker.Lease, error) {
	notifier, stopNotifier, err := StartNotifier(ctx, env, pool)
	if err != nil {
		return locker.Lease{}, err
	}
	defer stopNotifier()
	cfg.Notifier = notifier
	lk, err := locker.New(cfg)
	if err != nil {
		return locker.Lease{}, err
	}
	wctx, cancel := context.WithTimeout(ctx, opts.Wait)
	defer cancel()
	stopProgress := showWaitProgress(wctx, env, lk, pool, opts.Key, opts.Wait)
	defer stopProgress()
	// A lease handed off from the queue first runs for the claim window
	// only, and this process may exit before a background claim: waiting on
	// a connection of its own, Acquire claims it before it returns.
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return locker.Lease{}, fmt.Errorf("acquire %q: %w", opts.Key, err)
	}
	defer conn.Release()
	return one(lk.Acquire(wctx, conn.Conn(), opts.request(opts.Wait)))
}

// progressEvery is how often the progress line is rewritten (and the holder
// read again).
const progressEvery = time.Second

// showWaitProgress rewrites one line on Stderr every second while ctx lasts,
// when Stderr is a terminal: what is waited for, who holds it and how long
// the wait has gone on. stop ends it and erases the line, so what follows
// starts on a clean line. Without a terminal it does nothing.
func showWaitProgress(ctx context.Context, env Env, lk *locker.Locker, db locker.DBTX, key string, wait time.Duration) (stop func()) {
	width, ok := terminalWidth(env.Stderr)
	if !ok {
		return func() {}
	}
	pctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	start := time.Now()
	go func() {
		defer close(done)
		tick := time.NewTicker(progressEvery)
		defer tick.Stop()
		for {
			select {
			case <-pctx.Done():
				return
			case <-tick.C:
			}
			rctx, rcancel := context.WithTimeout(pctx, progressEvery)
			holder, found, err := store.Get[lockdb.LockInfo](rctx, db, key)
			rcancel()
			line := progressLine(env.Prog, key, holder, found && err == nil, time.Since(start), wait)
			fmt.Fprint(env.Stderr, "\r"+ansi.EraseEntireLine+ansi.Truncate(line, width-1, "…"))
		}
	}()
	return func() {
		cancel()
		<-done
		fmt.Fprint(env.Stderr, "\r"+ansi.EraseEntireLine)
	}
}

// progressLine is the text of the waiting line, escaped for a terminal. How
// long it has waited comes before the holder, so a narrow terminal cuts the
// holder's details (tokens are long: locker, "Failover"), not the count.
func progressLine(prog, key string, holder lockdb.LockInfo, known bool, waited, wait time.Duration) string {
	line := fmt.Sprintf("%s: waiting for %s, %s of %s", prog, textsafe.Escape(key),
		formatDuration(waited.Truncate(time.Second)), formatDuration(wait))
	if known && isGroup(holder) {
		line += "; held " + heldAs(holder.Mode, int(holder.Permits))
		if holder.Remaining > 0 {
			line += " (the last lease ends in " + formatDuration(holder.Remaining) + ")"
		}
	} else if known && holder.State() != lockdb.StateFree {
		line += fmt.Sprintf("; held by %s (token %d", textsafe.Escape(holder.Owner), holder.Token)
		if holder.Remaining > 0 {
			line += ", expires in " + formatDuration(holder.Remaining)
		}
		line += ")"
	}
	return line
}
