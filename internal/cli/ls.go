package cli

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/spf13/cobra"

	"github.com/lockctl/lockctl/internal/lockdb"
	"github.com/lockctl/lockctl/internal/lockview"
	"github.com/lockctl/lockctl/internal/textsafe"
	"github.com/lockctl/lockctl/store"
)

// LsCommand is `lockctl ls`.
func LsCommand() *cobra.Command {
	var o LsOptions
	cmd := &cobra.Command{
		Use:        "ls",
		Short:      "list the locks, ordered by key (--watch: again every --interval)",
		SuggestFor: []string{"list", "show", "status", "watch"},
		RunE:       RunE(func(ctx context.Context, env Env, _ []string) int { return Ls(ctx, env, o) }),
	}
	fs := cmd.Flags()
	fs.StringVar(&o.Prefix, "prefix", "", "only keys that start with this `text`")
	EnumListVar(fs, &o.States, "state", LockStates, "only locks in these `states` (held, expiring, expired, delayed, kept, free; comma-separated)")
	fs.BoolVar(&o.Watch, "watch", false, "list again every --interval until interrupted")
	DurationVar(fs, &o.Interval, "interval", 2*time.Second, "how often --watch lists")
	fs.BoolVar(&o.JSON, "json", false, "print one JSON array (with --watch: one a line)")
	fs.BoolVar(&o.CSV, "csv", false, csvFlagHelp)
	return ReadOnlyOK(cmd)
}

// LockStates are the states `ls --state` filters on, as ls shows them.
var LockStates = []string{string(lockdb.StateHeld), string(lockdb.StateExpiring), string(lockdb.StateExpired),
	string(lockdb.StateDelayed), string(lockdb.StateKept), string(lockdb.StateFree)}

// LsOptions are ls's flags.
type LsOptions struct {
	JSON     bool
	CSV      bool
	Prefix   string        // only keys starting with it
	States   []string      // only rows in one of these states (nil: all)
	Watch    bool          // list again every Interval until interrupted
	Interval time.Duration // --watch's period
}

// MinWatchInterval keeps `ls --watch` from hammering the database.
const MinWatchInterval = 100 * time.Millisecond

// Ls lists the locks whose key starts with opts.Prefix and whose state is
// one of opts.States, ordered by key: an aligned table, or with --json one
// JSON array. Both filters run in the database, and rows are printed as
// they arrive (but for a batch held back while the holders of the shared
// and semaphore keys in it are read: lockPrinter), so a listing's memory
// does not grow with the table (the table's column widths are the one
// thing held until its end). Remaining
// times come from the database's clock. With Watch it lists again every
// Interval until a signal ends it (exit 0), redrawing the screen on a
// terminal; a failed read is reported and retried.
func Ls(ctx context.Context, env Env, opts LsOptions) int {
	if !utf8.ValidString(opts.Prefix) {
		return env.Usagef("invalid --prefix: not valid UTF-8")
	}
	if code, ok := checkOutput(env, opts.JSON, opts.CSV); !ok {
		return code
	}
	if opts.Watch && opts.CSV {
		return env.Usagef("--csv does not go with --watch: a CSV file is one table")
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
		if err := listLocks(ctx, env, pool, opts); err != nil {
			return lsFailed(env, err)
		}
		return ExitOK
	}
	return watchLocks(ctx, env, pool, opts)
}

// outputError is a failed write of the listing, as opposed to a failed read.
type outputError struct{ err error }

func (e outputError) Error() string { return "write output: " + e.err.Error() }

// lsFailed reports a failed listing and returns its exit code.
func lsFailed(env Env, err error) int {
	var out outputError
	switch {
	case errors.Is(err, errReferenceOutput):
		return ExitError // writeReferenceLocks said why
	case errors.As(err, &out):
		return env.Errorf("%v", out)
	}
	return env.Fail(err)
}

// listLocks reads the table once and prints what it reads. A read that
// fails midway prints no table (the table is aligned at its end) and leaves
// a JSON array without its closing bracket, so a script never takes a
// partial listing for a whole one.
func listLocks(ctx context.Context, env Env, pool *pgxpool.Pool, opts LsOptions) error {
	shape, err := store.TableShape(ctx, pool)
	if err != nil {
		return err
	}
	if shape == store.ShapeReference {
		return listReferenceLocks(ctx, env, pool, opts)
	}
	out := bufio.NewWriterSize(env.Stdout, 64<<10)
	printer := newLockPrinter(env, out, opts, func(keys []string) (map[string][]lockview.Holder, error) {
		return lockview.HoldersOf(ctx, pool, keys)
	})
	f := lockview.LockFilter{Prefix: opts.Prefix}
	for _, s := range opts.States {
		f.States = append(f.States, lockdb.State(s))
	}
	err = lockview.EachLock(ctx, pool, f, printer.add)
	if err == nil {
		err = printer.close()
	}
	if flushErr := out.Flush(); err == nil && flushErr != nil {
		err = outputError{flushErr}
	}
	return err
}

// listReferenceLocks lists the reference service's table: small and about to be
// adopted (lockview.ListReference), so it is read whole and filtered here.
func listReferenceLocks(ctx context.Context, env Env, pool *pgxpool.Pool, opts LsOptions) error {
	locks, err := lockview.ListReference(ctx, pool, opts.Prefix)
	if err != nil {
		return err
	}
	if len(opts.States) > 0 {
		locks = slices.DeleteFunc(locks, func(l lockview.Lock) bool {
			return !slices.Contains(opts.States, string(l.State()))
		})
	}
	if code := writeReferenceLocks(env, locks, opts); code != ExitOK {
		return errReferenceOutput
	}
	return nil
}

// errReferenceOutput says writeReferenceLocks failed; it has reported why.
var errReferenceOutput = errors.New("write output")

// watchLocks is ls --watch: a terminal gets the screen cleared and a
// header line before each listing; a pipe gets each listing after a header
// line (JSON: one array a line, no header).
func watchLocks(ctx context.Context, env Env, pool *pgxpool.Pool, opts LsOptions) int {
	_, onTerminal := terminalWidth(env.Stdout)
	for {
		if onTerminal {
			fmt.Fprint(env.Stdout, "\x1b[H\x1b[2J")
		}
		if !opts.JSON {
			fmt.Fprintf(env.Stdout, "Every %s: %s  %s\n\n", formatDuration(opts.Interval),
				watchTitle(opts), time.Now().UTC().Format(eventTimeLayout))
		}
		err := listLocks(ctx, env, pool, opts)
		if ctx.Err() != nil {
			return ExitOK
		}
		var out outputError
		switch {
		case errors.As(err, &out) || errors.Is(err, errReferenceOutput):
			return lsFailed(env, err)
		case err != nil:
			if opts.JSON {
				fmt.Fprintln(env.Stdout) // an unfinished array ends its line; the next listing has its own
			}
			env.Fail(err) // reported; the next round tries again
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
