package cli

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/spf13/cobra"

	"github.com/lockctl/lockctl/internal/lockdb"
	"github.com/lockctl/lockctl/internal/lockview"
	"github.com/lockctl/lockctl/internal/operator"
	"github.com/lockctl/lockctl/internal/textsafe"
)

// EndSessionCommand is `lockctl end-session ID`.
func EndSessionCommand() *cobra.Command {
	var o EndSessionOptions
	cmd := &cobra.Command{
		Use:   "end-session ID",
		Short: "end session ID now as an operator: every lease it keeps is force-expired (exit 4: no such session)",
		RunE: RunE(func(ctx context.Context, env Env, args []string) int {
			o.ID = args[0]
			return EndSession(ctx, env, o)
		}),
		ValidArgsFunction: completeLiveSession,
	}
	ReasonVar(cmd.Flags(), &o.Reason, "reason", "why, recorded on the events")
	cmd.Flags().BoolVar(&o.JSON, "json", false, "print the result as JSON")
	return cmd
}

// EndSessionOptions are end-session's flags and argument.
type EndSessionOptions struct {
	ID     string // as typed: parsed by EndSession
	Reason string
	JSON   bool
}

// endSessionResult is end-session's --json object.
type endSessionResult struct {
	ID      int64  `json:"id"`
	Outcome string `json:"outcome"` // ended, gone
	Expired int    `json:"expired"` // leases force-expired
	Actor   string `json:"actor"`
	Reason  string `json:"reason,omitempty"`
}

// EndSession ends a session as an operator (Locker.EndSession, recorded
// with env.Actor and the reason): its running leases are force-expired
// (each with its event and lock-delay) and its process learns at its next
// heartbeat that it lost them. No such session (closed, ended already,
// pruned): exit 4.
func EndSession(ctx context.Context, env Env, opts EndSessionOptions) int {
	id, err := strconv.ParseInt(opts.ID, 10, 64)
	if err != nil || id <= 0 {
		return env.Usagef("invalid ID %q: want a session id, a positive number (lockctl sessions lists them)", textsafe.Escape(opts.ID))
	}
	op, pool, err := operatorOn(ctx, env)
	if err != nil {
		return env.Fail(err)
	}
	defer pool.Close()
	expired, err := op.EndSession(ctx, pool, id, opts.Reason)
	r := endSessionResult{ID: id, Outcome: lockdb.OutcomeEnded, Expired: expired, Actor: env.Actor, Reason: opts.Reason}
	switch {
	case errors.Is(err, operator.ErrNoSession):
		r.Outcome = lockdb.OutcomeGone
		if opts.JSON {
			return env.emitCode(r, ExitNotHeld)
		}
		env.printLine(fmt.Sprintf("%s: no session %d (closed, ended already, or pruned after it lapsed)", env.Prog, id))
		return ExitNotHeld
	case err != nil:
		return env.Fail(err)
	}
	if opts.JSON {
		return env.emit(r)
	}
	fmt.Fprintf(env.Stdout, "ended session %d: %s force-expired, by %s\n", id,
		plural(expired, "lease", "leases"), textsafe.Escape(env.Actor))
	return ExitOK
}

// plural is "1 lease", "3 leases".
func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return strconv.Itoa(n) + " " + many
}

// completeLiveSession completes ID with the live sessions' ids.
func completeLiveSession(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
	if len(args) > 0 {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	return fromDatabase(cmd, func(ctx context.Context, pool *pgxpool.Pool) ([]string, error) {
		sessions, err := lockview.ReadSessions(ctx, pool)
		var ids []string
		for _, s := range sessions {
			id := strconv.FormatInt(s.ID, 10)
			if s.State() == lockview.SessionLive && strings.HasPrefix(id, toComplete) && len(ids) < completionLimit {
				ids = append(ids, id)
			}
		}
		return ids, err
	})
}
