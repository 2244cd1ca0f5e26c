package cli

import (
	"context"
	"io"
	"os"
	"sync"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/lockctl/lockctl/internal/contexts"
	"github.com/lockctl/lockctl/internal/operator"
	"github.com/lockctl/lockctl/locker"
	"github.com/lockctl/lockctl/tui"
)

// consoleCloseWait bounds closing the console's pool on quit, so q quits at
// once even when the server is frozen (see CloseWithin).
const consoleCloseWait = 300 * time.Millisecond

// consoleCommand is `lockctl` with no command: the console. It is the
// root of the command tree (NewRoot).
func consoleCommand() *cobra.Command {
	var refresh, ttl time.Duration
	var readOnly bool
	var theme string
	cmd := &cobra.Command{
		Use:   "lockctl",
		Short: "open the console: the live lock table (the default when no command is given)",
		RunE: RunE(func(ctx context.Context, env Env, _ []string) int {
			if refresh < 100*time.Millisecond {
				return env.Usagef("invalid --refresh %s: must be at least 100ms", refresh)
			}
			if err := tui.CheckTerminal(os.Stdin, os.Stdout); err != nil {
				return env.Usagef("%v", err)
			}
			conns := &consoleConnections{env: env, ttl: ttl}
			defer conns.closeAll()
			first, err := conns.open(ctx, env.DSN, env.NotifyDSN, env.Actor, env.Context)
			if err != nil {
				return env.Fail(err)
			}
			opts := tui.Options{Pool: first.Pool, Locker: first.Locker, Operator: first.Operator, Server: first.Server, WakeUps: first.WakeUps,
				Context: first.Context, Close: first.Close, Refresh: refresh, ReadOnly: readOnly,
				Owner: locker.NewOwnerID(), TTL: ttl, Theme: tui.Theme(theme), Export: true}
			// The contexts file is read again here (the default context may
			// not have needed it): c switches to its contexts.
			if file, err := loadContexts(env.getenv); err == nil && len(file.Contexts) > 0 {
				for _, c := range file.Contexts {
					opts.Contexts = append(opts.Contexts, ConsoleContext(c))
				}
				opts.Connect = conns.connect
			}
			if err := tui.Run(ctx, opts); err != nil {
				return env.Fail(err)
			}
			return ExitOK
		}),
	}
	fs := cmd.Flags()
	TTLVar(fs, &refresh, "refresh", time.Second, "how often the console polls the database (at least 100ms)")
	fs.BoolVar(&readOnly, "read-only", false, "watch only: no acquire, renew, expire or release")
	TTLVar(fs, &ttl, "ttl", 30*time.Second, "default lease length in the console's acquire form")
	ThemeVar(fs, &theme)
	return ReadOnlyOK(cmd)
}

// consoleConnections opens the console's connections: the first, then
// one per context switched to. Each is closed once; closeAll closes what
// the console has not.
type consoleConnections struct {
	env    Env
	ttl    time.Duration
	mu     sync.Mutex
	closes []func()
}

// open builds a pool on dsn without connecting (the console starts while
// the database is down and shows itself reconnecting), a locker recording
// actor, and a notifier LISTENing on notifyDSN ("": the pool's).
func (cc *consoleConnections) open(ctx context.Context, dsn, notifyDSN, actor string, c contexts.Context) (tui.Connection, error) {
	pool, err := Open(ctx, dsn)
	if err != nil {
		return tui.Connection{}, err
	}
	lk, err := locker.New(locker.Config{Actor: actor, TTL: cc.ttl, LogGrants: true})
	var op operator.Operator
	if err == nil {
		op, err = operator.New(actor)
	}
	if err != nil {
		pool.Close()
		return tui.Connection{}, err
	}
	// The header shows whether wake-ups are live; a warning on stderr
	// would tear the screen.
	quiet := cc.env
	quiet.Stderr, quiet.NotifyDSN = io.Discard, notifyDSN
	notifier, stopNotifier, err := StartNotifier(ctx, quiet, pool)
	if err != nil {
		pool.Close()
		return tui.Connection{}, err
	}
	closeOnce := sync.OnceFunc(func() {
		stopNotifier()
		CloseWithin(pool, consoleCloseWait)
	})
	cc.mu.Lock()
	cc.closes = append(cc.closes, closeOnce)
	cc.mu.Unlock()
	return tui.Connection{Pool: pool, Locker: lk, Operator: op, Server: ServerName(pool.Config().ConnConfig),
		WakeUps: WakeUps(notifier), Context: ConsoleContext(c), Close: closeOnce}, nil
}

// connect opens context name for the console's switch (tui.Options.Connect),
// as --context name would: its database, its actor unless --actor was
// given. --notify-dsn was the first database's: it LISTENs on its own.
func (cc *consoleConnections) connect(ctx context.Context, name string) (tui.Connection, error) {
	t, err := resolveTarget(globals{context: name}, cc.env.getenv)
	if err != nil {
		return tui.Connection{}, err
	}
	actor, err := contextActor(cc.env.actorFlag, cc.env.actorGiven, t.context)
	if err != nil {
		return tui.Connection{}, err
	}
	return cc.open(ctx, t.dsn, "", actor, t.context)
}

// closeAll closes every connection opened, in parallel: each waits at most
// consoleCloseWait.
func (cc *consoleConnections) closeAll() {
	cc.mu.Lock()
	closes := cc.closes
	cc.mu.Unlock()
	var wg sync.WaitGroup
	for _, c := range closes {
		wg.Go(c)
	}
	wg.Wait()
}

// ThemeVar defines --theme: the console's palette (tui.Themes).
func ThemeVar(fs *pflag.FlagSet, p *string) {
	EnumVar(fs, p, "theme", tui.Themes, "the console's colours: dark, light, or auto (the default: from the background the terminal reports)")
}

// ConsoleContext is how the console shows c: its name in its colour in
// the header, its database with any password masked.
func ConsoleContext(c contexts.Context) tui.Context {
	if c.Name == "" {
		return tui.Context{}
	}
	return tui.Context{Name: c.Name, Color: c.Color, ReadOnly: c.ReadOnly, Database: databaseOf(c)}
}
