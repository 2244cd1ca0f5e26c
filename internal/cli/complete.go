package cli

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/lockctl/lockctl/internal/lockdb"
	"github.com/lockctl/lockctl/internal/lockview"
	"github.com/lockctl/lockctl/internal/textsafe"
	"github.com/lockctl/lockctl/store"
)

// completionShells are the shells `completion` writes scripts for.
var completionShells = []string{"bash", "zsh", "fish", "powershell"}

// completionCommand is `completion SHELL`: cobra's scripts, which ask
// `lockctl __complete` for each completion, so they never fall behind the
// command tree and can offer what is in the database.
func completionCommand(root *cobra.Command) *cobra.Command {
	root.CompletionOptions.DisableDefaultCmd = true
	return &cobra.Command{
		Use:   "completion SHELL",
		Short: "print a completion script for bash, zsh, fish or powershell (e.g. source <(lockctl completion bash))",
		Args: func(cmd *cobra.Command, args []string) error {
			if err := checkArgs(cmd, args); err != nil {
				return err
			}
			if !slices.Contains(completionShells, args[0]) {
				return usageErrorf("unknown shell %q: want one of %s", args[0], strings.Join(completionShells, ", "))
			}
			return nil
		},
		ValidArgs: completionShells,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := writeCompletion(cmd.OutOrStdout(), root, args[0]); err != nil {
				return fmt.Errorf("write output: %w", err)
			}
			return nil
		},
	}
}

func writeCompletion(w io.Writer, root *cobra.Command, shell string) error {
	switch shell {
	case "bash":
		if err := root.GenBashCompletionV2(w, true); err != nil {
			return err
		}
		_, err := io.WriteString(w, bashWordsFallback)
		return err
	case "zsh":
		return root.GenZshCompletion(w)
	case "fish":
		return root.GenFishCompletion(w, true)
	default:
		return root.GenPowerShellCompletionWithDesc(w)
	}
}

// bashWordsFallback lets cobra's bash script run without the
// bash-completion package, which defines the _get_comp_words_by_ref it
// calls: the words are then the line up to the cursor split at blanks, so
// keys with : or = stay one word (quoting is not understood).
const bashWordsFallback = `
# Without the bash-completion package: a minimal _get_comp_words_by_ref.
if ! declare -F _get_comp_words_by_ref >/dev/null 2>&1; then
_get_comp_words_by_ref() {
    local line="${COMP_LINE:0:COMP_POINT}"
    read -ra words <<< "$line"
    [[ -z "$line" || "$line" == *[[:space:]] ]] && words+=("")
    cword=$(( ${#words[@]} - 1 ))
    cur="${words[cword]}"
    prev="${words[cword-1]}"
}
fi
`

// registerChoices offers an enum flag's values (cli.EnumVar) in completion.
func registerChoices(cmd *cobra.Command) {
	cmd.LocalFlags().VisitAll(func(f *pflag.Flag) {
		if choices := flagChoices(f); choices != nil {
			_ = cmd.RegisterFlagCompletionFunc(f.Name, cobra.FixedCompletions(choices, cobra.ShellCompDirectiveNoFileComp))
		}
	})
}

// completionTimeout bounds what completion reads from the database: a
// slow or unreachable server must not freeze the user's shell.
// $LOCKCTL_COMPLETION_TIMEOUT (a duration) changes it, for a slow link.
const completionTimeout = time.Second

// completionTimeoutVar names the variable that changes completionTimeout.
const completionTimeoutVar = "LOCKCTL_COMPLETION_TIMEOUT"

func completionWait(getenv func(string) string) time.Duration {
	if getenv != nil {
		if d, err := ParseDuration(getenv(completionTimeoutVar)); err == nil && d > 0 {
			return d
		}
	}
	return completionTimeout
}

// completionLimit bounds how many keys completion offers.
const completionLimit = 200

// fromDatabase runs read on the database cmd names (--dsn, --context,
// and so on: resolveTarget) within completionTimeout. It
// offers nothing, silently, when the database cannot answer: completion
// must never print an error into the line being typed.
func fromDatabase(cmd *cobra.Command, read func(ctx context.Context, pool *pgxpool.Pool) ([]string, error)) ([]cobra.Completion, cobra.ShellCompDirective) {
	s, _ := cmd.Context().Value(streamsKey{}).(Streams)
	wait := completionWait(s.Getenv)
	ctx, cancel := context.WithTimeout(cmd.Context(), wait)
	defer cancel()
	t, err := resolveTarget(readGlobals(cmd), s.Getenv)
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	pool, err := Open(ctx, t.dsn)
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	defer CloseWithin(pool, wait)
	words, err := read(ctx, pool)
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	var out []cobra.Completion
	for _, w := range words {
		// Text from the database reaches the terminal only as it is; a
		// word that would need escaping is not offered.
		if textsafe.Escape(w) == w {
			out = append(out, w)
		}
	}
	return out, cobra.ShellCompDirectiveNoFileComp
}

// completeHeldKey completes KEY with the keys held now.
func completeHeldKey(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
	if len(args) > 0 {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	return fromDatabase(cmd, func(ctx context.Context, pool *pgxpool.Pool) ([]string, error) {
		return lockview.HeldKeys(ctx, pool, toComplete, completionLimit)
	})
}

// completeOwner completes --owner with the owner holding the KEY given, or
// each holder's of a shared or semaphore key.
func completeOwner(cmd *cobra.Command, args []string, _ string) ([]cobra.Completion, cobra.ShellCompDirective) {
	return fromKeyLeases(cmd, args, func(l lockdb.LockInfo, holders []lockview.Holder) []string {
		if holders == nil {
			return []string{l.Owner}
		}
		var owners []string
		for _, h := range holders {
			if !slices.Contains(owners, h.Owner) {
				owners = append(owners, h.Owner)
			}
		}
		return owners
	})
}

// completeToken completes --token with the KEY's current token, as the
// full number scripts and the JSON output use. For a shared or semaphore
// key it offers its holders' tokens (those of --owner, when given), and
// to a command without --owner (expire, force-release) first the group's
// own, which acts on every holder.
func completeToken(cmd *cobra.Command, args []string, _ string) ([]cobra.Completion, cobra.ShellCompDirective) {
	ownerFlag := cmd.Flags().Lookup("owner")
	return fromKeyLeases(cmd, args, func(l lockdb.LockInfo, holders []lockview.Holder) []string {
		if holders == nil {
			return []string{strconv.FormatInt(l.Token, 10)}
		}
		var tokens []string
		if ownerFlag == nil {
			tokens = append(tokens, strconv.FormatInt(l.Token, 10))
		}
		for _, h := range holders {
			if ownerFlag == nil || !ownerFlag.Changed || h.Owner == ownerFlag.Value.String() {
				tokens = append(tokens, strconv.FormatInt(h.Token, 10))
			}
		}
		return tokens
	})
}

// fromKeyLeases offers pick of the lease on args[0], if the key is held:
// its row, and when that is a running shared or semaphore group's, its
// holders' leases (non-nil; nil for a key held alone).
func fromKeyLeases(cmd *cobra.Command, args []string, pick func(lockdb.LockInfo, []lockview.Holder) []string) ([]cobra.Completion, cobra.ShellCompDirective) {
	if len(args) == 0 {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	return fromDatabase(cmd, func(ctx context.Context, pool *pgxpool.Pool) ([]string, error) {
		l, found, err := store.Get[lockdb.LockInfo](ctx, pool, args[0])
		if err != nil || !found || l.State() == lockdb.StateFree || l.State() == lockdb.StateExpired ||
			l.State() == lockdb.StateDelayed || l.State() == lockdb.StateKept {
			return nil, err
		}
		if !isGroup(l) {
			return pick(l, nil), nil
		}
		holders, err := lockview.HoldersOf(ctx, pool, []string{l.Key})
		if err != nil {
			return nil, err
		}
		return pick(l, append([]lockview.Holder{}, holders[l.Key]...)), nil
	})
}

// completeLease wires a lease command's completion: KEY from the held
// keys, --owner and --token (when it has them) from KEY's lease.
func completeLease(cmd *cobra.Command) {
	cmd.ValidArgsFunction = completeHeldKey
	if cmd.Flags().Lookup("owner") != nil {
		_ = cmd.RegisterFlagCompletionFunc("owner", completeOwner)
	}
	if cmd.Flags().Lookup("token") != nil {
		_ = cmd.RegisterFlagCompletionFunc("token", completeToken)
	}
}
