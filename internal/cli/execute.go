package cli

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"
)

// Action is a command's body, run once its flags and arguments are parsed
// and checked. args are the positional arguments, then those after "--".
// It reports its own errors on env.Stderr and returns the exit code.
type Action func(ctx context.Context, env Env, args []string) int

// Streams is what the command line runs with.
type Streams struct {
	Stdin  io.Reader // what `run` passes to its command; nil: no input
	Stdout io.Writer
	Stderr io.Writer
	Getenv func(string) string // os.Getenv; nil means an empty environment
}

type streamsKey struct{}

// Execute runs the command args (os.Args[1:]) name in the tree under root
// (NewRoot) and returns the exit code. This is the one place errors become
// exit codes: a usage error (unknown command or flag, missing or extra
// argument, bad flag value), found before any command runs, is reported on
// Stderr with exit 2; a command's own code passes through.
func Execute(ctx context.Context, root *cobra.Command, s Streams, args []string) int {
	root.SetArgs(args)
	root.SetIn(orEmpty(s.Stdin))
	root.SetOut(s.Stdout)
	root.SetErr(s.Stderr)
	cmd, err := root.ExecuteContextC(context.WithValue(ctx, streamsKey{}, s))
	var status exitCodeError
	var usage *commandUsageError
	switch {
	case err == nil:
		return ExitOK
	case errors.As(err, &status):
		return int(status)
	case errors.As(err, &usage):
		prog := usage.prog
		if prog == "" {
			prog = cmd.CommandPath()
		}
		env := Env{Prog: prog, Stderr: s.Stderr, helpHint: helpHint(prog)}
		return env.Usagef("%s", usage.msg)
	}
	return Env{Prog: cmd.CommandPath(), Stderr: s.Stderr}.Errorf("%v", err)
}

// orEmpty is r, or an empty reader for nil (cobra reads os.Stdin otherwise).
func orEmpty(r io.Reader) io.Reader {
	if r == nil {
		return eofReader{}
	}
	return r
}

type eofReader struct{}

func (eofReader) Read([]byte) (int, error) { return 0, io.EOF }

// exitCodeError is the error RunE returns for a command that reported its own
// failure: only its exit code is left to pass on.
type exitCodeError int

func (s exitCodeError) Error() string { return fmt.Sprintf("exit status %d", int(s)) }

// commandUsageError is a usage error found before the command ran. prog
// names who reports it ("" for the command itself).
type commandUsageError struct {
	prog string
	msg  string
}

func (e *commandUsageError) Error() string { return e.msg }

func usageErrorf(format string, args ...any) error {
	return &commandUsageError{msg: fmt.Sprintf(format, args...)}
}

func helpHint(prog string) string { return fmt.Sprintf("Run '%s --help' for usage.", prog) }

// RunE makes a cobra RunE from an Action: it resolves the global flags
// into an Env, runs the action, and turns its exit code into the error
// Execute maps back.
func RunE(action Action) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		env, err := commandEnv(cmd)
		if err != nil {
			return err
		}
		if code := action(cmd.Context(), env, args); code != ExitOK {
			return exitCodeError(code)
		}
		return nil
	}
}

// commandEnv is the Env of cmd, from the streams Execute put in its
// context and the global flags: the database they name (resolveTarget),
// and the actor.
func commandEnv(cmd *cobra.Command) (Env, error) {
	s, _ := cmd.Context().Value(streamsKey{}).(Streams)
	g := readGlobals(cmd)
	t, err := resolve(g, s.Getenv, cmd.Annotations[explicitAnnotation] != "true")
	if err != nil {
		return Env{}, err
	}
	if err := checkReadOnly(cmd, t.context); err != nil {
		return Env{}, err
	}
	f := cmd.Flags().Lookup("actor")
	actorGiven := f != nil && f.Changed
	actor, err := contextActor(g.actor, actorGiven, t.context)
	if err != nil {
		return Env{}, err
	}
	prog := cmd.CommandPath()
	env := Env{Prog: prog, Stdin: s.Stdin, Stdout: s.Stdout, Stderr: s.Stderr, helpHint: helpHint(prog),
		DSN: t.dsn, ExplicitDSN: t.explicit, NotifyDSN: g.notifyDSN, Actor: actor, Context: t.context,
		getenv: s.Getenv, actorFlag: g.actor, actorGiven: actorGiven}
	env.secrets = append(dsnPasswords(env.DSN), dsnPasswords(env.NotifyDSN)...)
	if s.Getenv != nil {
		env.secrets = append(env.secrets, s.Getenv("PGPASSWORD"))
	}
	return env, nil
}
