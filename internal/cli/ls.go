package cli

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/lockctl/lockctl/internal/lockview"
	"github.com/lockctl/lockctl/internal/textsafe"
	"github.com/lockctl/lockctl/store"
)

// LockStates are the states `ls --state` filters on, as ls shows them.
var LockStates = []string{string(store.StateHeld), string(store.StateExpiring), string(store.StateExpired), string(store.StateFree)}

// LsOptions are ls's flags.
type LsOptions struct {
	JSON     bool
	Prefix   string        // only keys starting with it
	States   []string      // only rows in one of these states (nil: all)
	Watch    bool          // list again every Interval until interrupted
	Interval time.Duration // --watch's period
}

// MinWatchInterval keeps `ls --watch` from hammering the database.
const MinWatchInterval = 100 * time.Millisecond

// lockRow is one element of `ls --json`.
type lockRow struct {
	Key           string         `json:"key"`
	Owner         string         `json:"owner"` // holder, or last holder when free
	Token         int64          `json:"token"`
	ExpiresAt     time.Time      `json:"expires_at"`
	TTLMs         int64          `json:"ttl_ms"`
	State         store.State    `json:"state"`
	RemainingMs   int64          `json:"remaining_ms"` // negative: expired that long ago
	HeldForMs     int64          `json:"held_for_ms"`  // since the current grant
	AcquiredAt    time.Time      `json:"acquired_at"`
	RenewedAt     *time.Time     `json:"renewed_at"`
	RenewCount    int32          `json:"renew_count"`
	ReleasedAt    *time.Time     `json:"released_at"`
	GrantKind     string         `json:"grant_kind"`
	PreviousOwner *string        `json:"previous_owner"`
	PreviousToken *int64         `json:"previous_token"`
	Metadata      map[string]any `json:"metadata"`
}

func toLockRow(l store.Lock) lockRow {
	return lockRow{
		Key: l.Key, Owner: l.Owner, Token: l.Token, ExpiresAt: utc(l.ExpiresAt),
		TTLMs: l.TTL.Milliseconds(), State: l.State(), RemainingMs: l.Remaining.Milliseconds(),
		HeldForMs: l.HeldFor.Milliseconds(), AcquiredAt: utc(l.AcquiredAt), RenewedAt: utcPtr(l.RenewedAt),
		RenewCount: l.RenewCount, ReleasedAt: utcPtr(l.ReleasedAt), GrantKind: l.GrantKind,
		PreviousOwner: l.PreviousOwner, PreviousToken: l.PreviousToken, Metadata: l.Metadata,
	}
}

// Ls lists the locks whose key starts with opts.Prefix and whose state is
// one of opts.States, ordered by key: an aligned table, or with --json one
// JSON array. Remaining times come from the database's clock. With Watch it
// lists again every Interval until a signal ends it (exit 0), redrawing the
// screen on a terminal; a failed read is reported and retried.
func Ls(ctx context.Context, env Env, opts LsOptions) int {
	if !utf8.ValidString(opts.Prefix) {
		return env.Usagef("invalid --prefix: not valid UTF-8")
	}
	if opts.Watch && opts.Interval < MinWatchInterval {
		return env.Usagef("invalid --interval %s: must be at least %s", opts.Interval, MinWatchInterval)
	}
	pool, err := Connect(ctx, env.DSN)
	if err != nil {
		return env.Fail(err)
	}
	defer pool.Close()
	if !opts.Watch {
		listing, err := readLocks(ctx, pool, opts)
		if err != nil {
			return env.Fail(err)
		}
		return writeLocks(env, listing, opts.JSON)
	}
	return watchLocks(ctx, env, pool, opts)
}

// listing is one read of the lock table.
type listing struct {
	locks []store.Lock
	// seed: the table is the reference service's, not migrated (its four
	// columns only). Each read looks again, so --watch follows a migrate.
	seed bool
}

func readLocks(ctx context.Context, pool *pgxpool.Pool, opts LsOptions) (listing, error) {
	shape, err := store.TableShape(ctx, pool)
	if err != nil {
		return listing{}, err
	}
	l := listing{seed: shape == store.ShapeSeed}
	if l.seed {
		l.locks, err = lockview.ListSeed(ctx, pool, opts.Prefix)
	} else {
		l.locks, err = lockview.ListPrefix(ctx, pool, opts.Prefix)
	}
	if err != nil || len(opts.States) == 0 {
		return l, err
	}
	l.locks = slices.DeleteFunc(l.locks, func(l store.Lock) bool {
		return !slices.Contains(opts.States, string(l.State()))
	})
	return l, nil
}

// watchLocks is ls --watch: a terminal gets the screen cleared and a
// header line before each listing; a pipe gets each listing after a header
// line (JSON: one array a line, no header).
func watchLocks(ctx context.Context, env Env, pool *pgxpool.Pool, opts LsOptions) int {
	_, onTerminal := terminalWidth(env.Stdout)
	for {
		listing, err := readLocks(ctx, pool, opts)
		if ctx.Err() != nil {
			return ExitOK
		}
		if onTerminal {
			fmt.Fprint(env.Stdout, "\x1b[H\x1b[2J")
		}
		if !opts.JSON {
			fmt.Fprintf(env.Stdout, "Every %s: %s  %s\n\n", formatDuration(opts.Interval),
				watchTitle(opts), time.Now().UTC().Format(eventTimeLayout))
		}
		if err != nil {
			env.Fail(err) // reported; the next round tries again
		} else if code := writeLocks(env, listing, opts.JSON); code != ExitOK {
			return code
		}
		if !onTerminal && !opts.JSON {
			fmt.Fprintln(env.Stdout)
		}
		select {
		case <-ctx.Done():
			return ExitOK
		case <-time.After(opts.Interval):
		}
	}
}

// watchTitle names what is watched: "ls --prefix billing: --state held".
func watchTitle(opts LsOptions) string {
	parts := []string{"ls"}
	if opts.Prefix != "" {
		parts = append(parts, "--prefix "+textsafe.Escape(opts.Prefix))
	}
	if len(opts.States) > 0 {
		parts = append(parts, "--state "+strings.Join(opts.States, ","))
	}
	return strings.Join(parts, " ")
}

// writeLocks prints locks as ls does: a table, or one JSON array.
func writeLocks(env Env, l listing, asJSON bool) int {
	if l.seed {
		return writeSeedLocks(env, l.locks, asJSON)
	}
	locks := l.locks
	if asJSON {
		rows := make([]lockRow, 0, len(locks))
		for _, l := range locks {
			rows = append(rows, toLockRow(l))
		}
		return env.emit(rows)
	}
	if err := writeLockTable(env.Stdout, locks); err != nil {
		return env.Errorf("write output: %v", err)
	}
	return ExitOK
}

func writeLockTable(w io.Writer, locks []store.Lock) error {
	rows := make([][]string, 0, len(locks))
	for _, l := range locks {
		remaining, heldFor := "-", "-"
		switch l.State() {
		case store.StateHeld, store.StateExpiring:
			remaining, heldFor = formatDuration(l.Remaining), formatDuration(l.HeldFor)
		case store.StateExpired:
			heldFor = formatDuration(l.HeldFor)
		}
		rows = append(rows, []string{textsafe.Escape(l.Key), textsafe.Escape(l.Owner),
			strconv.FormatInt(l.Token, 10), string(l.State()), remaining, heldFor})
	}
	return writeTable(w, "no locks", []string{"KEY", "OWNER", "TOKEN", "STATE", "REMAINING", "HELD-FOR"}, rows)
}
