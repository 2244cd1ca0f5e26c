package cli

import (
	"context"
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/lockctl/lockctl/internal/contexts"
	"github.com/lockctl/lockctl/internal/textsafe"
)

// ContextCommand is `lockctl context`, whose one command is `ls`; alone
// it shows its help.
func ContextCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:        "context",
		Short:      "the contexts: databases named in the contexts file, for --context NAME",
		SuggestFor: []string{"contexts", "ctx", "config"},
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				return &commandUsageError{prog: cmd.CommandPath(), msg: fmt.Sprintf("unknown command %q: its command is ls", args[0])}
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, _ []string) error {
			printHelp(cmd, nil)
			return nil
		},
	}
	cmd.AddCommand(contextListCommand())
	return cmd
}

func contextListCommand() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "ls",
		Short: "list the contexts: name, database (passwords masked), colour, read-only, actor; * marks the one in use",
		RunE: RunE(func(_ context.Context, env Env, _ []string) int {
			return ContextList(env, asJSON)
		}),
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print one JSON array")
	return ReadOnlyOK(cmd)
}

// contextRow is one element of `context ls --json`.
type contextRow struct {
	Name     string `json:"name"`
	DSN      string `json:"dsn,omitempty"` // passwords masked
	Service  string `json:"service,omitempty"`
	Color    string `json:"color,omitempty"`
	ReadOnly bool   `json:"read_only"`
	Actor    string `json:"actor,omitempty"`
	Default  bool   `json:"default"`
	Current  bool   `json:"current"` // the one this command line would use
}

// ContextList prints the contexts file's contexts, in its order, marking
// the one the global flags and environment pick (env.Context). Without a
// file it says where one would be read.
func ContextList(env Env, asJSON bool) int {
	file, err := loadContexts(env.getenv)
	switch {
	case errors.Is(err, contexts.ErrNoFile):
		if asJSON {
			return env.emit([]contextRow{})
		}
		env.printLine(env.Prog + ": no contexts: " + textsafe.Escape(file.Path) + " does not exist (docs/console.md#contexts)")
		return ExitOK
	case err != nil:
		return env.Usagef("%s", textsafe.Escape(err.Error()))
	}
	rows := make([]contextRow, 0, len(file.Contexts))
	for _, c := range file.Contexts {
		r := contextRow{Name: c.Name, Service: c.Service, Color: c.Color, ReadOnly: c.ReadOnly, Actor: c.Actor,
			Default: c.Name == file.Default, Current: c.Name == env.Context.Name}
		if c.DSN != "" {
			r.DSN = RedactDSN(c.DSN)
		}
		rows = append(rows, r)
	}
	if asJSON {
		return env.emit(rows)
	}
	cells := make([][]string, 0, len(rows))
	for i, r := range rows {
		current, readOnly := "", "no"
		if r.Current {
			current = "*"
		}
		if r.ReadOnly {
			readOnly = "yes"
		}
		name := r.Name
		if r.Default {
			name += " (default)"
		}
		cells = append(cells, []string{current, name, textsafe.Escape(databaseOf(file.Contexts[i])),
			orDash(&r.Color), readOnly, textsafe.Escape(orDash(&r.Actor))})
	}
	header := []string{"CURRENT", "NAME", "DATABASE", "COLOR", "READ-ONLY", "ACTOR"}
	if err := writeTable(env.Stdout, "no contexts in "+textsafe.Escape(file.Path), header, cells); err != nil {
		return env.Errorf("write output: %v", err)
	}
	return ExitOK
}
