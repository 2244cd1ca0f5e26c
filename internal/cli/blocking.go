package cli

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/lockctl/lockctl/internal/lockview"
	"github.com/lockctl/lockctl/internal/textsafe"
)

// BlockingCommand is `lockctl blocking`.
func BlockingCommand() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:        "blocking",
		Short:      "who waits for whom: every waiting owner, the key it waits for and that key's holders, the root blockers and the deadlocks",
		SuggestFor: []string{"blockers", "waits", "deadlocks", "locks"},
		RunE:       RunE(func(ctx context.Context, env Env, _ []string) int { return Blocking(ctx, env, asJSON) }),
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, `print {"waits": [...], "deadlocks": [[owners...]]}`)
	return ReadOnlyOK(cmd)
}

// Blocking prints the waits across keys (lockview.ReadBlocking): a table
// of waits, longest first, then the root blockers (they hold a waited-for
// key and wait for nothing: end them and the chains move) and the
// deadlocks, each a ring in wait order; or, with asJSON, the read model's
// JSON.
func Blocking(ctx context.Context, env Env, asJSON bool) int {
	pool, err := Connect(ctx, env.DSN)
	if err != nil {
		return env.Fail(err)
	}
	defer pool.Close()
	b, err := lockview.ReadBlocking(ctx, pool)
	if err != nil {
		return env.Fail(err)
	}
	if b.Truncated {
		env.printLine(fmt.Sprintf("%s: more than %d waits: showing the longest-waiting ones; chains and deadlocks among the others are not seen",
			env.Prog, lockview.MaxBlockingWaits))
	}
	if asJSON {
		err = writeJSON(env.Stdout, b)
	} else {
		err = writeBlocking(env, b)
	}
	if err != nil {
		return env.Errorf("write output: %v", err)
	}
	return ExitOK
}

func writeBlocking(env Env, b lockview.Blocking) error {
	rows := make([][]string, 0, len(b.Waits))
	for _, w := range b.Waits {
		rows = append(rows, []string{textsafe.Escape(w.Waiter), textsafe.Escape(w.Key), holdersText(w), formatDuration(w.Waited)})
	}
	if err := writeTable(env.Stdout, "no owner is waiting", []string{"WAITER", "KEY", "HOLDERS", "WAITING"}, rows); err != nil {
		return err
	}
	if roots := b.Roots(); len(roots) > 0 {
		if _, err := fmt.Fprintf(env.Stdout, "\nroot blockers: %s\n", escapedList(roots, ", ")); err != nil {
			return err
		}
	}
	for i, ring := range b.Deadlocks {
		if i == 0 {
			if _, err := fmt.Fprintln(env.Stdout); err != nil {
				return err
			}
		}
		if _, err := fmt.Fprintf(env.Stdout, "deadlock: %s → %s\n", escapedList(ring, " → "), textsafe.Escape(ring[0])); err != nil {
			return err
		}
	}
	return nil
}

// holdersText is the HOLDERS cell: the key's owners, or why there are
// none (the head of the queue takes the key next).
func holdersText(w lockview.Wait) string {
	if len(w.Holders) > 0 {
		return escapedList(w.Holders, ",")
	}
	if w.KeyState == "" {
		return "- (no row)"
	}
	return "- (" + string(w.KeyState) + ")"
}

func escapedList(names []string, sep string) string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = textsafe.Escape(n)
	}
	return strings.Join(out, sep)
}
