package cli

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

const exitCodesHelp = "Exit codes: 0 done, 1 error, 2 usage, 3 held by another owner, 4 not held (lost, wrong owner or token), 5 deadlock (the wait would close a cycle of waits), 128+signal a wait interrupted (129 SIGHUP, 130 SIGINT, 143 SIGTERM)."

const connectionHelp = "Connection: --dsn, else --context, else $DATABASE_URL, else the contexts file's default context, else libpq's PG* variables (PGHOST, PGPORT, PGUSER, PGPASSWORD, PGDATABASE, ...)."

// printHelp is every command's help (cobra's HelpFunc): for the root, every
// command with its synopsis and the global flags; for a command, its
// synopsis, summary and flags with their defaults.
func printHelp(cmd *cobra.Command, _ []string) {
	w := cmd.OutOrStdout()
	if !cmd.HasParent() {
		printUsage(w, cmd)
		return
	}
	fmt.Fprintf(w, "Usage: %s [global flags]\n\n%s\n", synopsis(cmd), cmd.Short)
	if subs := listed(cmd); len(subs) > 1 || len(subs) == 1 && subs[0] != cmd {
		fmt.Fprintln(w, "\nCommands:")
		for _, sub := range subs {
			fmt.Fprintf(w, "  %s\n        %s\n", synopsis(sub), sub.Short)
		}
	}
	if own := ownFlags(cmd); own.HasAvailableFlags() {
		fmt.Fprintf(w, "\nFlags:\n%s", flagUsages(own))
	}
	fmt.Fprintf(w, "\nGlobal flags:\n%s\n%s\n%s\n", flagUsages(cmd.Root().PersistentFlags()), connectionHelp, exitCodesHelp)
}

// printUsage writes the program's help.
func printUsage(w io.Writer, root *cobra.Command) {
	fmt.Fprintf(w, "%s: distributed locks in PostgreSQL, watched and operated from a terminal.\n\nUsage:\n", root.Name())
	fmt.Fprintf(w, "  %s\n        %s\n", synopsis(root), root.Short)
	for _, cmd := range root.Commands() {
		for _, c := range listed(cmd) {
			fmt.Fprintf(w, "  %s\n        %s\n", synopsis(c), c.Short)
		}
	}
	if root.Version != "" {
		fmt.Fprintf(w, "  %s --version\n        print the version and VCS revision of this binary\n", root.Name())
	}
	fmt.Fprintf(w, "\nGlobal flags (every command):\n%s\n", flagUsages(root.PersistentFlags()))
	fmt.Fprintf(w, "%s\n%s\n\nRun '%s COMMAND --help' for a command's flags and their defaults.\n",
		connectionHelp, exitCodesHelp, root.Name())
}

// listed are the commands help lists for cmd: cmd itself, or, for a
// group of commands (context), each of its commands; none for one help
// leaves out.
func listed(cmd *cobra.Command) []*cobra.Command {
	if !cmd.IsAvailableCommand() {
		return nil
	}
	if !cmd.HasAvailableSubCommands() {
		return []*cobra.Command{cmd}
	}
	var out []*cobra.Command
	for _, c := range cmd.Commands() {
		out = append(out, listed(c)...)
	}
	return out
}

// synopsis is "lockctl renew KEY --owner token --token N [--ttl duration]":
// required flags bare, optional ones in brackets.
func synopsis(cmd *cobra.Command) string {
	u := parseUse(cmd)
	parts := []string{cmd.CommandPath()}
	parts = append(parts, u.args...)
	for _, a := range u.optional {
		parts = append(parts, "["+a+"]")
	}
	visitShown(ownFlags(cmd), func(f *pflag.Flag) {
		name, _ := pflag.UnquoteUsage(f)
		s := "--" + f.Name
		if name != "" {
			s += " " + name
		}
		if !isRequired(f) {
			s = "[" + s + "]"
		}
		parts = append(parts, s)
	})
	if u.trailing != "" {
		parts = append(parts, "--", u.trailing)
	}
	return strings.Join(parts, " ")
}

// ownFlags are cmd's flags without the global ones, in the order they
// were defined (cobra's LocalNonPersistentFlags sorts them).
func ownFlags(cmd *cobra.Command) *pflag.FlagSet {
	own := pflag.NewFlagSet(cmd.Name(), pflag.ContinueOnError)
	own.SortFlags = false
	cmd.Flags().VisitAll(func(f *pflag.Flag) {
		if !isGlobal(cmd, f) {
			own.AddFlag(f)
		}
	})
	return own
}

// flagUsages lists fs's flags with their defaults, one a line, aligned.
func flagUsages(fs *pflag.FlagSet) string {
	var b strings.Builder
	tw := tabwriter.NewWriter(&b, 0, 0, 3, ' ', 0)
	visitShown(fs, func(f *pflag.Flag) {
		name, usage := pflag.UnquoteUsage(f)
		left := "      --" + f.Name
		if f.Shorthand != "" {
			left = "  -" + f.Shorthand + ", --" + f.Name
		}
		if name != "" {
			left += " " + name
		}
		if def := defaultText(f); def != "" {
			usage += " (default " + def + ")"
		}
		fmt.Fprintf(tw, "%s\t%s\n", left, usage)
	})
	_ = tw.Flush()
	return b.String()
}

// visitShown calls fn for each of fs's flags that help offers: not the
// hidden ones, which one process passes to another, nor --version, which
// help lists as a line of its own.
func visitShown(fs *pflag.FlagSet, fn func(*pflag.Flag)) {
	fs.VisitAll(func(f *pflag.Flag) {
		if !f.Hidden && f.Name != "version" {
			fn(f)
		}
	})
}

// defaultText is how help shows a flag's default; "" when it is the zero
// value and not worth showing.
func defaultText(f *pflag.Flag) string {
	switch f.DefValue {
	case "", "0", "0s", "false":
		return ""
	}
	if f.Value.Type() == "string" {
		return fmt.Sprintf("%q", f.DefValue)
	}
	return f.DefValue
}

// helpCommand is `help [COMMAND]`: cobra's own prints the root's help for
// a command that does not exist, and exits 0; this one calls it a usage
// error and suggests the command meant.
func helpCommand() *cobra.Command {
	return &cobra.Command{
		Use: "help [COMMAND]", Short: "show help for COMMAND, or for lockctl",
		Args: func(cmd *cobra.Command, args []string) error {
			if err := checkArgs(cmd, args); err != nil {
				return err
			}
			if len(args) == 1 {
				if c, _, err := cmd.Root().Find(args); err != nil || c == cmd.Root() || !c.IsAvailableCommand() {
					return unknownCommand(cmd.Root(), args[0])
				}
			}
			return nil
		},
		ValidArgsFunction: func(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
			var names []cobra.Completion
			if len(args) == 0 {
				for _, c := range cmd.Root().Commands() {
					if c.IsAvailableCommand() && strings.HasPrefix(c.Name(), toComplete) {
						names = append(names, cobra.CompletionWithDesc(c.Name(), c.Short))
					}
				}
			}
			return names, cobra.ShellCompDirectiveNoFileComp
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			target := cmd.Root()
			if len(args) == 1 {
				target, _, _ = cmd.Root().Find(args)
			}
			printHelp(target, nil)
			return nil
		},
	}
}
