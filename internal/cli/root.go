package cli

import (
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/lockctl/lockctl/internal/operator"
)

// NewRoot is the lockctl command tree: the console as the root command
// (run when no command is named), the given commands under it, and what
// every command shares: the global flags, help, did-you-mean suggestions,
// --version and `completion`.
func NewRoot(version string, commands ...*cobra.Command) *cobra.Command {
	return configureRoot(consoleCommand(), version, commands...)
}

// configureRoot turns root into the top of a command tree.
func configureRoot(root *cobra.Command, version string, commands ...*cobra.Command) *cobra.Command {
	// Help lists the commands in the order given: the order of use.
	cobra.EnableCommandSorting = false
	root.SilenceErrors, root.SilenceUsage = true, true
	root.SuggestionsMinimumDistance = 2
	defineGlobals(root.PersistentFlags())
	root.PersistentFlags().SortFlags = false
	_ = root.RegisterFlagCompletionFunc("context", completeContext)
	if version != "" {
		root.Version = version
		root.SetVersionTemplate("{{.Name}} {{.Version}}\n")
		root.Flags().Bool("version", false, "print the version and VCS revision of this binary")
	}
	root.Args = rootArgs
	// A KEY or flag value nothing completes gets no file names offered.
	noFiles := cobra.ShellCompDirectiveNoFileComp
	root.CompletionOptions.DefaultShellCompDirective = &noFiles
	root.AddCommand(commands...)
	root.AddCommand(completionCommand(root))
	root.SetHelpCommand(helpCommand())
	root.SetHelpFunc(printHelp)
	root.SetFlagErrorFunc(flagError)
	walk(root, func(c *cobra.Command) {
		c.Flags().SortFlags = false
		if c.Args == nil {
			c.Args = checkArgs
		}
		registerChoices(c)
	})
	return root
}

// walk calls fn for cmd and every command under it.
func walk(cmd *cobra.Command, fn func(*cobra.Command)) {
	fn(cmd)
	for _, c := range cmd.Commands() {
		walk(c, fn)
	}
}

// globals are the flags every command has.
type globals struct {
	dsn, context, notifyDSN, actor string
}

func defineGlobals(fs *pflag.FlagSet) {
	fs.String("dsn", "", "PostgreSQL connection `string` (URL or key=value); default $DATABASE_URL, else the default context, else libpq's PG* variables")
	fs.String("context", "", "the database a context of the contexts file names, by its `name` (lockctl context ls); exclusive with --dsn")
	fs.String("notify-dsn", "", "connection `string` waiting commands LISTEN on for releases (default: --dsn); behind a transaction pooler, give a direct or session-pooled one")
	fs.String("actor", operator.DefaultActor(), "`name` recorded on the events of operator actions (expire, force-release, revoke, end-delay, end-session, prune)")
	fs.BoolP("help", "h", false, "show help")
}

// readGlobals reads the global flags as parsed for cmd.
func readGlobals(cmd *cobra.Command) globals {
	get := func(name string) string {
		if f := cmd.Flags().Lookup(name); f != nil {
			return f.Value.String()
		}
		return ""
	}
	return globals{dsn: get("dsn"), context: get("context"), notifyDSN: get("notify-dsn"), actor: get("actor")}
}

// isGlobal says whether f is one of the flags every command has.
func isGlobal(cmd *cobra.Command, f *pflag.Flag) bool {
	return cmd.Root().PersistentFlags().Lookup(f.Name) == f
}
