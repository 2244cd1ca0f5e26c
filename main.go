// Command lockctl is the console and scriptable CLI for distributed locks
// kept in PostgreSQL. This file is the wiring: which commands the tree
// holds. Each command (its flags and its body) lives in its own file in
// internal/cli (bench and demo in their packages, the console in tui).
package main

import (
	"context"
	"os"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/lockctl/lockctl/internal/bench"
	"github.com/lockctl/lockctl/internal/cli"
	"github.com/lockctl/lockctl/internal/demo"
	"github.com/lockctl/lockctl/internal/serve"
)

// newRoot is the command tree, in the order help lists it.
func newRoot() *cobra.Command {
	return cli.NewRoot(cli.BuildVersion(),
		cli.LsCommand(),
		cli.EventsCommand(),
		cli.AcquireCommand(),
		cli.RunCommand(),
		cli.ElectCommand(),
		cli.LeaderCommand(),
		cli.RenewCommand(),
		cli.ReleaseCommand(),
		cli.DowngradeCommand(),
		cli.UpgradeCommand(),
		cli.ExpireCommand(),
		cli.RevokeCommand(),
		cli.ForceReleaseCommand(),
		cli.EndDelayCommand(),
		cli.SessionsCommand(),
		cli.EndSessionCommand(),
		cli.MetricsCommand(),
		cli.MigrateCommand(),
		cli.GrantCommand(),
		cli.PruneCommand(),
		cli.BlockingCommand(),
		cli.ContextCommand(),
		bench.Command(),
		demo.Command(),
		serve.Command(),
	)
}

func main() {
	// Ctrl-C, SIGTERM or SIGHUP cancels the command's context (with the
	// signal as its cause), so a waiting acquire removes its waiter record,
	// closes its connections and exits 128+signal.
	ctx, stop := cli.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	code := cli.Execute(ctx, newRoot(), cli.Streams{
		Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr, Getenv: os.Getenv,
	}, os.Args[1:])
	stop()
	os.Exit(code)
}
