package cli

import (
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/lockctl/lockctl/internal/textsafe"
)

// usage is what a command's Use line says about its arguments:
// "run KEY [NAME] -- CMD ARGS…" names required KEY, optional NAME, and
// arguments after "--" (at least one) that help calls CMD ARGS…; a last
// required argument written "KEY…" may be given more than once.
type usage struct {
	args, optional []string
	trailing       string
	variadic       bool
}

func parseUse(cmd *cobra.Command) usage {
	words := strings.Fields(cmd.Use)[1:]
	var u usage
	for i, w := range words {
		switch {
		case w == "--":
			u.trailing = strings.Join(words[i+1:], " ")
			return u
		case strings.HasPrefix(w, "["):
			u.optional = append(u.optional, strings.Trim(w, "[]"))
		default:
			u.args = append(u.args, w)
			u.variadic = strings.HasSuffix(w, "…")
		}
	}
	return u
}

// checkArgs is every command's argument check, from its Use line, after
// its flags parsed: required flags first (cli.Required), then the
// positional arguments, then the "--" of a command that runs another.
// Its errors are usage errors (exit 2), reported before the command runs.
func checkArgs(cmd *cobra.Command, args []string) error {
	var missing []string
	cmd.Flags().VisitAll(func(f *pflag.Flag) {
		if isRequired(f) && !f.Changed {
			missing = append(missing, "--"+f.Name)
		}
	})
	if len(missing) > 0 {
		return usageErrorf("missing %s", strings.Join(missing, " and "))
	}
	u := parseUse(cmd)
	positional := args
	if u.trailing != "" {
		dash := cmd.ArgsLenAtDash()
		switch {
		case dash < 0 && len(args) > len(u.args)+len(u.optional):
			// With KEY… the words cannot tell keys from the command: the
			// likelier mistake is one key and a command without "--".
			n := len(u.args) + len(u.optional)
			example := append(append(slices.Clone(args[:n]), "--"), args[n:]...)
			return usageErrorf("put -- before the command: %s %s", cmd.CommandPath(), textsafe.Escape(strings.Join(example, " ")))
		case dash < 0 || dash == len(args):
			return usageErrorf("missing -- %s", u.trailing)
		}
		positional = args[:dash]
	}
	if len(positional) < len(u.args) {
		return usageErrorf("missing %s", strings.Join(u.args[len(positional):], " "))
	}
	if !u.variadic && len(positional) > len(u.args)+len(u.optional) {
		return usageErrorf("unexpected argument %q", positional[len(u.args)+len(u.optional)])
	}
	return nil
}

// rootArgs is the root command's argument check: the console takes no
// arguments, so a word there is a command that does not exist.
func rootArgs(cmd *cobra.Command, args []string) error {
	if len(args) == 0 {
		return nil
	}
	return unknownCommand(cmd.Root(), args[0])
}

func unknownCommand(root *cobra.Command, typed string) error {
	return &commandUsageError{prog: root.Name(),
		msg: fmt.Sprintf("unknown command %q%s", typed, suggestCommand(root, typed))}
}
