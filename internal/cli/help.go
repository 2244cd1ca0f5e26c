package cli

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/spf13/pflag"
)

const exitCodesHelp = "Exit codes: 0 done, 1 error, 2 usage, 3 held by another owner, 4 not held (lost, wrong owner or token), 128+signal a wait interrupted (129 SIGHUP, 130 SIGINT, 143 SIGTERM)."

const connectionHelp = "Connection: --dsn, else $DATABASE_URL, else libpq's PG* variables (PGHOST, PGPORT, PGUSER, PGPASSWORD, PGDATABASE, ...)."

// printUsage writes the program's help: every command with its synopsis,
// and the global flags with their defaults.
func (p Program) printUsage(w io.Writer) {
	fmt.Fprintf(w, "%s: distributed locks in PostgreSQL, watched and operated from a terminal.\n\n", p.Name)
	fmt.Fprintf(w, "Usage:\n")
	var global *pflag.FlagSet
	for _, cmd := range p.Commands {
		_, own, g, _, _ := p.flagSets(cmd)
		global = g
		fmt.Fprintf(w, "  %s\n", p.synopsis(cmd, own))
		fmt.Fprintf(w, "        %s\n", cmd.Summary)
	}
	if p.Version != "" {
		fmt.Fprintf(w, "  %s --version\n        print the version and VCS revision of this binary\n", p.Name)
	}
	if global == nil {
		global = pflag.NewFlagSet(p.Name, pflag.ContinueOnError)
		defineGlobals(global, &globals{})
	}
	fmt.Fprintf(w, "\nGlobal flags (every command):\n%s\n", flagUsages(global))
	fmt.Fprintf(w, "%s\n%s\n\nRun '%s COMMAND --help' for a command's flags and their defaults.\n",
		connectionHelp, exitCodesHelp, p.Name)
}

// printCommandHelp writes one command's synopsis, summary and flags.
func (p Program) printCommandHelp(w io.Writer, cmd Command) {
	_, own, global, _, _ := p.flagSets(cmd)
	fmt.Fprintf(w, "Usage: %s [global flags]\n\n%s\n", p.synopsis(cmd, own), cmd.Summary)
	if own.HasAvailableFlags() {
		fmt.Fprintf(w, "\nFlags:\n%s", flagUsages(own))
	}
	fmt.Fprintf(w, "\nGlobal flags:\n%s\n%s\n%s\n", flagUsages(global), connectionHelp, exitCodesHelp)
}

// synopsis is "lockctl renew KEY --owner id --token N [--ttl duration]":
// required flags bare, optional ones in brackets.
func (p Program) synopsis(cmd Command, own *pflag.FlagSet) string {
	parts := []string{p.prog(cmd)}
	parts = append(parts, cmd.Args...)
	for _, a := range cmd.Optional {
		parts = append(parts, "["+a+"]")
	}
	visitShown(own, func(f *pflag.Flag) {
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
	if cmd.Trailing != "" {
		parts = append(parts, "--", cmd.Trailing)
	}
	return strings.Join(parts, " ")
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

// visitShown calls fn for each of fs's flags that help and completion
// offer: not the hidden ones, which one process passes to another.
func visitShown(fs *pflag.FlagSet, fn func(*pflag.Flag)) {
	fs.VisitAll(func(f *pflag.Flag) {
		if !f.Hidden {
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
