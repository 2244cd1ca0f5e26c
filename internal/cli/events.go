package cli

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/lockctl/lockctl/internal/lockdb"
	"github.com/lockctl/lockctl/internal/lockview"
	"github.com/lockctl/lockctl/internal/textsafe"
	"github.com/lockctl/lockctl/locker"
)

// EventsCommand is `lockctl events [KEY]`.
func EventsCommand() *cobra.Command {
	var o EventsOptions
	cmd := &cobra.Command{
		Use:        "events [KEY]",
		Short:      "print the newest events (grants, steals, releases, operator actions, sessions ended, rejected stale writes, waits refused as deadlocks), of KEY or of every key, oldest first",
		SuggestFor: []string{"log", "logs", "history"},
		RunE: RunE(func(ctx context.Context, env Env, args []string) int {
			if len(args) > 0 {
				o.Key = args[0]
			}
			return Events(ctx, env, o)
		}),
	}
	fs := cmd.Flags()
	DurationVar(fs, &o.Since, "since", 0, "only events at most this old, e.g. 1h (0: any age)")
	fs.IntVar(&o.Limit, "limit", 100, "print at most `N` events (the newest)")
	fs.BoolVar(&o.JSON, "json", false, "print one JSON array")
	fs.BoolVar(&o.CSV, "csv", false, csvFlagHelp)
	return ReadOnlyOK(cmd)
}

// EventsOptions are events's flags and argument.
type EventsOptions struct {
	Key   string        // "": every key
	Since time.Duration // 0: any age
	Limit int
	JSON  bool
	CSV   bool
}

// MaxEventsLimit bounds --limit: events is a look at recent history, not an
// export of the whole log.
const MaxEventsLimit = 100000

// eventRow is one element of `events --json`.
type eventRow struct {
	ID            int64          `json:"id"`
	Time          time.Time      `json:"time"`
	Key           string         `json:"key"`
	Kind          string         `json:"kind"`
	Owner         *string        `json:"owner"`
	Token         *int64         `json:"token"`
	Actor         string         `json:"actor"` // what the caller claimed
	Role          string         `json:"role"`  // the database role that caused it
	PreviousOwner *string        `json:"previous_owner"`
	PreviousToken *int64         `json:"previous_token"`
	Detail        map[string]any `json:"detail"`
}

// Events prints the newest opts.Limit events (of opts.Key, no older than
// opts.Since), oldest first: a table, or with --json one JSON array.
func Events(ctx context.Context, env Env, opts EventsOptions) int {
	if opts.Key != "" {
		if err := lockdb.ValidateKey(opts.Key); err != nil {
			return env.Usagef("invalid KEY: %v", err)
		}
	}
	if code, ok := checkOutput(env, opts.JSON, opts.CSV); !ok {
		return code
	}
	if opts.Limit < 1 || opts.Limit > MaxEventsLimit {
		return env.Usagef("invalid --limit %d: must be between 1 and %d", opts.Limit, MaxEventsLimit)
	}
	pool, err := Connect(ctx, env.DSN)
	if err != nil {
		return env.Fail(err)
	}
	defer pool.Close()
	events, err := lockview.History(ctx, pool, lockview.HistoryQuery{Key: opts.Key, Since: opts.Since, Limit: opts.Limit})
	if err != nil {
		return env.Fail(err)
	}
	if opts.CSV {
		// The columns are the event reader's (lockview.Event), as the
		// console's export writes them.
		return emitCSV(env, events)
	}
	if opts.JSON {
		rows := make([]eventRow, 0, len(events))
		for _, e := range events {
			rows = append(rows, eventRow{ID: e.ID, Time: utc(e.OccurredAt), Key: e.Key, Kind: e.Kind,
				Owner: e.Owner, Token: e.Token, Actor: e.Actor, Role: e.Role, PreviousOwner: e.PreviousOwner,
				PreviousToken: e.PreviousToken, Detail: e.Detail})
		}
		return env.emit(rows)
	}
	rows := make([][]string, 0, len(events))
	for _, e := range events {
		before := "-"
		if e.PreviousOwner != nil || e.PreviousToken != nil {
			before = orDash(e.PreviousOwner) + " " + tokenText(e.PreviousToken)
		}
		rows = append(rows, []string{utc(e.OccurredAt).Format(eventTimeLayout), e.Kind, eventSubject(e),
			textsafe.Escape(orDash(e.Owner)), tokenText(e.Token), e.By(textsafe.Escape),
			textsafe.Escape(before), textsafe.Escape(eventDetail(e))})
	}
	header := []string{"TIME", "EVENT", "KEY", "OWNER", "TOKEN", "BY", "BEFORE", "DETAIL"}
	if err := writeTable(env.Stdout, "no events", header, rows); err != nil {
		return env.Errorf("write output: %v", err)
	}
	return ExitOK
}

// eventSubject is the KEY cell: the key, or for an event of no one key
// (session_ended) what it is of, "session 12".
func eventSubject(e lockview.Event) string {
	if id, ok := e.SessionID(); ok {
		return "session " + strconv.FormatInt(id, 10)
	}
	if e.Key == "" {
		return "-"
	}
	return textsafe.Escape(e.Key)
}

// eventTimeLayout is RFC 3339 in UTC with milliseconds: events a few
// milliseconds apart (a steal right after an expiry) stay in order.
const eventTimeLayout = "2006-01-02T15:04:05.000Z07:00"

func orDash(s *string) string {
	if s == nil || *s == "" {
		return "-"
	}
	return *s
}

func tokenText(t *int64) string {
	if t == nil {
		return "-"
	}
	return strconv.FormatInt(*t, 10)
}

// eventDetail is the DETAIL cell: a refused deadlock's cycle in words (its
// JSON, a list of steps, reads poorly in a column), else the detail as
// compact JSON.
func eventDetail(e lockview.Event) string {
	if cycle, ok := e.DeadlockCycle(); ok {
		return cycleText(cycle)
	}
	return detailText(e.Detail)
}

// cycleText is "cycle A waits for x → B waits for y → A": each owner waits
// for its key, which the next one holds or is queued ahead for.
func cycleText(cycle []locker.DeadlockStep) string {
	parts := make([]string, 0, len(cycle)+1)
	for _, s := range cycle {
		parts = append(parts, s.Owner+" waits for "+s.Key)
	}
	return "cycle " + strings.Join(append(parts, cycle[0].Owner), " → ")
}

// detailText is an event's detail as compact JSON, "-" when empty.
func detailText(d map[string]any) string {
	if len(d) == 0 {
		return "-"
	}
	b, err := json.Marshal(d)
	if err != nil {
		return "-"
	}
	return string(b)
}
