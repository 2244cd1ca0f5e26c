package cli

import (
	"context"
	"io"
	"os"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/lockctl/lockctl/internal/contexts"
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
			// Not Connect: the console starts while the database is down
			// and shows itself reconnecting.
			pool, err := Open(ctx, env.DSN)
			if err != nil {
				return env.Fail(err)
			}
			defer CloseWithin(pool, consoleCloseWait)
			lk, err := locker.New(locker.Config{Actor: env.Actor, TTL: ttl, LogGrants: true})
			if err != nil {
				return env.Fail(err)
			}
			// The header shows whether wake-ups are live; a warning on
			// stderr would tear the screen.
			quiet := env
			quiet.Stderr = io.Discard
			notifier, stopNotifier, err := StartNotifier(ctx, quiet, pool)
			if err != nil {
				return env.Fail(err)
			}
			defer stopNotifier()
			err = tui.Run(ctx, tui.Options{Pool: pool, Locker: lk, Refresh: refresh, ReadOnly: readOnly || env.Context.ReadOnly,
				Server: ServerName(pool.Config().ConnConfig), Owner: locker.NewOwnerID(), TTL: ttl,
				WakeUps: notifier.State, Theme: tui.Theme(theme), Context: ConsoleContext(env.Context)})
			if err != nil {
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
