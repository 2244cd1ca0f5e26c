package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/spf13/pflag"

	"github.com/lockctl/lockctl/internal/textsafe"
	"github.com/lockctl/lockctl/locker"
)

// Action runs a command once its flags and arguments are parsed and
// checked. args holds the positional arguments the Command names (Args, then
// whichever Optional ones were given), then its Trailing arguments. It
// returns the process exit code.
type Action func(ctx context.Context, env Env, args []string) int

// Command is one entry of the command table in main.go.
type Command struct {
	// Name is the subcommand. "" is the default command, run when the
	// command line starts with a flag or is empty (the console).
	Name string
	// Args names the positional arguments, all required: {"KEY"}.
	Args []string
	// Optional names positional arguments after Args that may be left out.
	Optional []string
	// Trailing, when set, says the command takes arguments after "--"
	// (at least one) and names them for help: "CMD ARGS…". Flags after
	// "--" are the trailing command's, not lockctl's.
	Trailing string
	// Summary is the one-line description shown in help.
	Summary string
	// Flags defines the command's own flags on fs and returns the Action
	// that reads them. It must do no I/O: help calls it just to list flags.
	Flags func(fs *pflag.FlagSet) Action
}

// Program is the whole command line: its name, its command table and what
// it runs with.
type Program struct {
	Name     string // "lockctl"
	Commands []Command
	Stdin    io.Reader // what `run` passes to its command; nil: no input
	Stdout   io.Writer
	Stderr   io.Writer
	Getenv   func(string) string // os.Getenv; nil means an empty environment
	// Version is what --version prints (see BuildVersion); "" leaves
	// --version out.
	Version string
}

// globals are the flags every command has.
type globals struct {
	dsn       string
	notifyDSN string
	actor     string
	help      bool
}

func defineGlobals(fs *pflag.FlagSet, g *globals) {
	fs.StringVar(&g.dsn, "dsn", "", "PostgreSQL connection `string` (URL or key=value); default $DATABASE_URL, else libpq's PG* variables")
	fs.StringVar(&g.notifyDSN, "notify-dsn", "", "connection `string` waiting commands LISTEN on for releases (default: --dsn); behind a transaction pooler, give a direct or session-pooled one")
	fs.StringVar(&g.actor, "actor", locker.DefaultActor(), "`name` recorded on the events of operator actions (expire, force-release, prune)")
	fs.BoolVarP(&g.help, "help", "h", false, "show help")
}

// Dispatch runs the command named by args (os.Args[1:]) and returns the
// exit code. Usage errors (unknown command or flag, missing or extra
// argument, bad flag value) are reported on Stderr with exit 2 before any
// command runs.
func Dispatch(ctx context.Context, p Program, args []string) int {
	p = p.withBuiltins()
	if len(args) > 0 {
		switch args[0] {
		case "-h", "--help":
			p.printUsage(p.Stdout)
			return ExitOK
		case "--version":
			if p.Version != "" && len(args) == 1 {
				fmt.Fprintln(p.Stdout, p.Name, p.Version)
				return ExitOK
			}
		case "help":
			if len(args) == 1 {
				p.printUsage(p.Stdout)
				return ExitOK
			}
			if cmd, ok := p.lookup(args[1]); ok && args[1] != "" {
				p.printCommandHelp(p.Stdout, cmd)
				return ExitOK
			}
			return p.usageError("unknown command %q%s", args[1], p.suggestCommand(args[1]))
		}
	}
	name, rest := "", args
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		name, rest = args[0], args[1:]
	}
	cmd, ok := p.lookup(name)
	switch {
	case ok:
	case len(args) == 0:
		p.printUsage(p.Stderr)
		return ExitUsage
	case name == "":
		return p.usageError("missing command before %q", args[0])
	default:
		return p.usageError("unknown command %q%s", name, p.suggestCommand(name))
	}
	return p.run(ctx, cmd, rest)
}

// withBuiltins is p with the commands every Program has (completion)
// added to its table.
func (p Program) withBuiltins() Program {
	for _, c := range p.Commands {
		if c.Name == "completion" {
			return p
		}
	}
	p.Commands = append(slices.Clone(p.Commands), p.completionCommand())
	return p
}

func (p Program) lookup(name string) (Command, bool) {
	for _, c := range p.Commands {
		if c.Name == name {
			return c, true
		}
	}
	return Command{}, false
}

// prog is how messages name a command: "lockctl acquire".
func (p Program) prog(cmd Command) string {
	if cmd.Name == "" {
		return p.Name
	}
	return p.Name + " " + cmd.Name
}

func (p Program) usageError(format string, args ...any) int {
	fmt.Fprintf(p.Stderr, "%s: %s\nRun '%s --help' for usage.\n", p.Name, fmt.Sprintf(format, args...), p.Name)
	return ExitUsage
}

// flagSets builds a command's own flags and the global flags. The returned
// parse set holds both (sharing their values); own and global are kept
// apart for help.
func (p Program) flagSets(cmd Command) (parse, own, global *pflag.FlagSet, g *globals, action Action) {
	own = pflag.NewFlagSet(p.prog(cmd), pflag.ContinueOnError)
	global = pflag.NewFlagSet(p.prog(cmd), pflag.ContinueOnError)
	own.SortFlags, global.SortFlags = false, false
	g = &globals{}
	defineGlobals(global, g)
	if cmd.Flags != nil {
		action = cmd.Flags(own)
	}
	parse = pflag.NewFlagSet(p.prog(cmd), pflag.ContinueOnError)
	parse.SetOutput(io.Discard)
	parse.Usage = func() {}
	parse.SortFlags = false
	parse.AddFlagSet(own)
	parse.AddFlagSet(global)
	return parse, own, global, g, action
}

func (p Program) run(ctx context.Context, cmd Command, args []string) int {
	fs, _, _, g, action := p.flagSets(cmd)
	env := Env{Prog: p.prog(cmd), Stdin: p.Stdin, Stdout: p.Stdout, Stderr: p.Stderr,
		helpHint: fmt.Sprintf("Run '%s --help' for usage.", p.prog(cmd))}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			p.printCommandHelp(p.Stdout, cmd)
			return ExitOK
		}
		return env.Usagef("%s%s", describeParseError(err), suggestFlag(err, fs))
	}
	if g.help {
		p.printCommandHelp(p.Stdout, cmd)
		return ExitOK
	}
	var missing []string
	fs.VisitAll(func(f *pflag.Flag) {
		if isRequired(f) && !f.Changed {
			missing = append(missing, "--"+f.Name)
		}
	})
	if len(missing) > 0 {
		return env.Usagef("missing %s", strings.Join(missing, " and "))
	}
	positional, trailing := fs.Args(), []string(nil)
	if cmd.Trailing != "" {
		dash := fs.ArgsLenAtDash()
		switch {
		case dash < 0 && len(positional) > len(cmd.Args)+len(cmd.Optional):
			n := len(cmd.Args) + len(cmd.Optional)
			example := append(append(slices.Clone(positional[:n]), "--"), positional[n:]...)
			return env.Usagef("put -- before the command: %s %s", p.prog(cmd), textsafe.Escape(strings.Join(example, " ")))
		case dash < 0 || dash == len(positional):
			return env.Usagef("missing -- %s", cmd.Trailing)
		}
		positional, trailing = positional[:dash], positional[dash:]
	}
	if len(positional) < len(cmd.Args) {
		return env.Usagef("missing %s", strings.Join(cmd.Args[len(positional):], " "))
	}
	if len(positional) > len(cmd.Args)+len(cmd.Optional) {
		return env.Usagef("unexpected argument %q", positional[len(cmd.Args)+len(cmd.Optional)])
	}
	if err := locker.ValidateOwner(g.actor); err != nil {
		return env.Usagef("invalid --actor: %v", err)
	}
	env.DSN = ResolveDSN(g.dsn, p.Getenv)
	env.ExplicitDSN = g.dsn
	env.NotifyDSN = g.notifyDSN
	env.Actor = g.actor
	env.secrets = append(dsnPasswords(env.DSN), dsnPasswords(env.NotifyDSN)...)
	if p.Getenv != nil {
		env.secrets = append(env.secrets, p.Getenv("PGPASSWORD"))
	}
	if action == nil {
		return env.Errorf("command has no action")
	}
	return action(ctx, env, append(positional, trailing...))
}

// describeParseError names the flag and value pflag rejected.
func describeParseError(err error) string {
	var invalid *pflag.InvalidValueError
	var unknown *pflag.NotExistError
	var needsValue *pflag.ValueRequiredError
	switch {
	case errors.As(err, &invalid):
		return fmt.Sprintf("invalid --%s %q: %v", invalid.GetFlag().Name, invalid.GetValue(), invalid.Unwrap())
	case errors.As(err, &unknown):
		name := textsafe.Escape(unknown.GetSpecifiedName())
		if unknown.GetSpecifiedShortnames() != "" {
			return "unknown flag -" + name
		}
		return "unknown flag --" + name
	case errors.As(err, &needsValue):
		return fmt.Sprintf("flag --%s needs a value", needsValue.GetFlag().Name)
	}
	return textsafe.Escape(err.Error())
}
