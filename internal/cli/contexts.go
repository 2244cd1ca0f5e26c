package cli

import (
	"errors"

	"github.com/spf13/cobra"

	"github.com/lockctl/lockctl/internal/contexts"
	"github.com/lockctl/lockctl/internal/lockdb"
	"github.com/lockctl/lockctl/internal/textsafe"
)

// target is the database a command works on: its connection string, and
// the context that named it, if one did.
type target struct {
	dsn string
	// explicit is the database the command line named (--dsn or
	// --context), "" when it comes from the environment or the default
	// context.
	explicit string
	context  contexts.Context // Name "" when no context named it
	file     contexts.File    // the contexts file, when it was read
}

// resolveTarget picks the database, in this order: --dsn, --context,
// $DATABASE_URL, the contexts file's default context, and else libpq's
// PG* variables (dsn ""). The file is read only when --context is given
// or nothing before the default names a database. Every error is the
// caller's to fix: a usage error.
func resolveTarget(g globals, getenv func(string) string) (target, error) {
	return resolve(g, getenv, true)
}

// resolve is resolveTarget, without the environment's and the default
// context's database unless fromEnvironment.
func resolve(g globals, getenv func(string) string, fromEnvironment bool) (target, error) {
	switch {
	case g.dsn != "" && g.context != "":
		return target{}, usageErrorf("--context and --dsn are exclusive: a context names its database (lockctl context ls)")
	case g.dsn != "":
		return target{dsn: g.dsn, explicit: g.dsn}, nil
	case g.context == "" && !fromEnvironment:
		return target{}, nil
	case g.context == "" && getenv != nil && getenv("DATABASE_URL") != "":
		return target{dsn: getenv("DATABASE_URL")}, nil
	}
	file, err := loadContexts(getenv)
	switch {
	case errors.Is(err, contexts.ErrNoFile) && g.context == "":
		return target{}, nil // no contexts: libpq's PG* variables
	case errors.Is(err, contexts.ErrNoFile):
		return target{}, usageErrorf("unknown context %q: %v (docs/console.md#contexts)", g.context, err)
	case err != nil:
		return target{}, usageErrorf("%v", err)
	}
	name := g.context
	if name == "" {
		name = file.Default
	}
	if name == "" {
		return target{file: file}, nil
	}
	c, err := file.Find(name)
	if err != nil {
		return target{}, usageErrorf("%v", err)
	}
	if len(dsnPasswords(c.DSN)) > 0 && file.Mode&0o077 != 0 {
		return target{}, usageErrorf("context %q has a password in its dsn, and %s is readable by others (mode %04o): "+
			"chmod 600 it, or keep the password in ~/.pgpass", c.Name, file.Path, file.Mode)
	}
	t := target{dsn: c.ConnString(), context: c, file: file}
	if g.context != "" {
		// Named on the command line; the file's default is not: the demo
		// and bench do not write to it unasked.
		t.explicit = t.dsn
	}
	return t, nil
}

// loadContexts reads the contexts file where getenv's environment puts it.
func loadContexts(getenv func(string) string) (contexts.File, error) {
	path, err := contexts.Path(getenv)
	if err != nil {
		return contexts.File{}, err
	}
	return contexts.Load(path)
}

// contextActor is the actor recorded in context c: --actor (flag) when
// given, else the context's, else --actor's default.
func contextActor(flag string, given bool, c contexts.Context) (string, error) {
	if c.Actor != "" && !given {
		if err := lockdb.ValidateOwner(c.Actor); err != nil {
			return "", usageErrorf("invalid actor of context %q: %v", c.Name, err)
		}
		return c.Actor, nil
	}
	if err := lockdb.ValidateOwner(flag); err != nil {
		return "", usageErrorf("invalid --actor: %v", err)
	}
	return flag, nil
}

// explicitAnnotation marks a command that works only on a database the
// command line names (ExplicitOnly).
const explicitAnnotation = "lockctl.explicit-database-only"

// ExplicitOnly marks cmd as one that writes to a database only when the
// command line names it (--dsn, --context): demo and bench, which start a
// private server otherwise. Neither $DATABASE_URL nor the default context
// is looked at for it, so a read-only default context does not refuse it.
// It returns cmd.
func ExplicitOnly(cmd *cobra.Command) *cobra.Command { return annotate(cmd, explicitAnnotation) }

// readOnlyAnnotation marks a command that a read-only context may run: it
// only reads, or (the console, serve) leaves its actions out.
const readOnlyAnnotation = "lockctl.read-only-context"

// ReadOnlyOK marks cmd as one a read-only context may run; every other
// command is refused under one, before it connects. It returns cmd.
func ReadOnlyOK(cmd *cobra.Command) *cobra.Command { return annotate(cmd, readOnlyAnnotation) }

// annotate marks cmd with annotation and returns it.
func annotate(cmd *cobra.Command, annotation string) *cobra.Command {
	if cmd.Annotations == nil {
		cmd.Annotations = map[string]string{}
	}
	cmd.Annotations[annotation] = "true"
	return cmd
}

// checkReadOnly refuses a command that may change locks under a
// read-only context.
func checkReadOnly(cmd *cobra.Command, c contexts.Context) error {
	if !c.ReadOnly || cmd.Annotations[readOnlyAnnotation] == "true" {
		return nil
	}
	return usageErrorf("context %q is read-only: %s may change locks (use a context that is not read-only)", c.Name, cmd.CommandPath())
}

// completeContext completes --context with the contexts file's names.
func completeContext(cmd *cobra.Command, _ []string, _ string) ([]cobra.Completion, cobra.ShellCompDirective) {
	s, _ := cmd.Context().Value(streamsKey{}).(Streams)
	file, err := loadContexts(s.Getenv)
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	var out []cobra.Completion
	for _, c := range file.Contexts {
		out = append(out, cobra.CompletionWithDesc(c.Name, textsafe.Escape(databaseOf(c)+readOnlyNote(c))))
	}
	return out, cobra.ShellCompDirectiveNoFileComp
}

// databaseOf is what c connects to, as it may be shown: its DSN with any
// password masked, or its service.
func databaseOf(c contexts.Context) string {
	if c.Service != "" {
		return "service=" + c.Service
	}
	return RedactDSN(c.DSN)
}

func readOnlyNote(c contexts.Context) string {
	if c.ReadOnly {
		return " (read-only)"
	}
	return ""
}
