package cli

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/lockctl/lockctl/internal/operator"
)

// PruneCommand is `lockctl prune`.
func PruneCommand() *cobra.Command {
	var o PruneOptions
	cmd := &cobra.Command{
		Use:        "prune",
		Short:      "delete lock rows free for longer than --older (and events older than --events-older)",
		SuggestFor: []string{"gc", "cleanup", "clean"},
		RunE:       RunE(func(ctx context.Context, env Env, _ []string) int { return Prune(ctx, env, o) }),
	}
	fs := cmd.Flags()
	DurationVar(fs, &o.Older, "older", 24*time.Hour, "delete lock rows free for longer than this")
	DurationVar(fs, &o.EventsOlder, "events-older", 0, "also delete events older than this (0: keep all events)")
	fs.BoolVar(&o.JSON, "json", false, "print the counts as JSON")
	return cmd
}

// PruneOptions are prune's flags.
type PruneOptions struct {
	Older       time.Duration // delete lock rows free for longer than this
	EventsOlder time.Duration // also delete events older than this; 0 keeps them
	JSON        bool
}

// pruneResult is prune's --json object.
type pruneResult struct {
	Locks    int64 `json:"locks"`
	Events   int64 `json:"events"`
	Waiters  int64 `json:"waiters"`
	Sessions int64 `json:"sessions"`
}

// Prune deletes lock rows free (released, or expired and never released)
// for longer than opts.Older, records of waiters that died, and, with
// EventsOlder, old events. It goes through the operator's Prune, which keeps every
// key's tokens increasing across the deletion.
func Prune(ctx context.Context, env Env, opts PruneOptions) int {
	if err := opts.check(); err != nil {
		return env.Fail(err)
	}
	op, pool, err := operatorOn(ctx, env)
	if err != nil {
		return env.Fail(err)
	}
	defer pool.Close()
	res, err := op.Prune(ctx, pool, operator.PruneOptions{FreeFor: opts.Older, EventsOlderThan: opts.EventsOlder})
	if err != nil {
		return env.Fail(err)
	}
	if opts.JSON {
		return env.emit(pruneResult{Locks: res.Locks, Events: res.Events, Waiters: res.Waiters, Sessions: res.Sessions})
	}
	fmt.Fprintf(env.Stdout, "pruned %d lock rows free for more than %s, %d events, %d dead waiter records, %d lapsed sessions\n",
		res.Locks, formatDuration(opts.Older), res.Events, res.Waiters, res.Sessions)
	return ExitOK
}

// check validates what the flag types cannot, before connecting.
func (o PruneOptions) check() error {
	if o.Older <= 0 {
		return usagef("invalid --older %s: must be positive", o.Older)
	}
	if o.EventsOlder < 0 {
		return usagef("invalid --events-older %s: must not be negative", o.EventsOlder)
	}
	return nil
}
