package cli

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/lockctl/lockctl/locker"
	"github.com/lockctl/lockctl/store"
)

// MigrateOptions are migrate's flags.
type MigrateOptions struct {
	// ReferenceTimeZone is the zone the reference service's JVM ran in, for
	// adopting its table ("": the session's TimeZone).
	ReferenceTimeZone string
	// Status prints which migrations are applied and pending, and changes
	// nothing; JSON prints it as one object.
	Status, JSON bool
	// DryRun prints what a migrate would run, and changes nothing.
	DryRun bool
}

// MigrateCommand is `lockctl migrate`.
func MigrateCommand() *cobra.Command {
	var o MigrateOptions
	cmd := &cobra.Command{
		Use:        "migrate",
		Short:      "apply the schema's pending migrations and re-create the functions (--status, --dry-run: change nothing); adopts the reference service's table",
		SuggestFor: []string{"init", "setup"},
		RunE:       RunE(func(ctx context.Context, env Env, _ []string) int { return Migrate(ctx, env, o) }),
	}
	fs := cmd.Flags()
	fs.StringVar(&o.ReferenceTimeZone, "reference-time-zone", "", "`zone` the reference service's JVM ran in, to read its expires_at (default: the session's TimeZone)")
	fs.BoolVar(&o.Status, "status", false, "show the applied and the pending migrations, change nothing")
	fs.BoolVar(&o.JSON, "json", false, "with --status: print it as JSON")
	fs.BoolVar(&o.DryRun, "dry-run", false, "show what migrate would run, change nothing")
	return cmd
}

// Migrate applies the migrations the database has not recorded, then
// re-creates the functions (locker.Migrate's schema, built into the binary).
// Running it again is safe. On the reference service's table it adopts the
// table and says what it kept. A schema migrated by a newer lockctl is
// refused.
func Migrate(ctx context.Context, env Env, opts MigrateOptions) int {
	switch {
	case opts.Status && opts.DryRun:
		return env.Usagef("--status and --dry-run do not go together")
	case opts.JSON && !opts.Status:
		return env.Usagef("--json goes with --status")
	}
	pool, err := Connect(ctx, env.DSN)
	if err != nil {
		return env.Fail(err)
	}
	defer pool.Close()
	server := ServerName(pool.Config().ConnConfig)
	if opts.Status || opts.DryRun {
		status, err := store.Status(ctx, pool)
		if err != nil {
			return env.Fail(err)
		}
		if opts.Status {
			return printMigrationStatus(env, server, status, opts.JSON)
		}
		return printMigrationPlan(env, server, status)
	}
	adoption, err := store.MigrateWith(ctx, pool, store.MigrateOptions{ReferenceTimeZone: opts.ReferenceTimeZone, AdoptReference: true})
	if errors.Is(err, store.ErrUnknownTimeZone) {
		return env.Usagef("invalid --reference-time-zone: %v", err)
	}
	if err != nil {
		return env.Fail(err)
	}
	if adoption.Adopted {
		fmt.Fprintf(env.Stdout, "adopted the reference service's distributed_lock on %s: %d locks kept (%d held), "+
			"expires_at read as local time in %s; new fencing tokens start above %d\n",
			server, adoption.Locks, adoption.Held, adoption.TimeZone, adoption.MaxToken)
	}
	fmt.Fprintf(env.Stdout, "migrated %s: lock tables are up to date (migration %d)\n", server, store.LatestVersion())
	return ExitOK
}

// migrationStatusJSON is `migrate --status --json`: the highest version
// applied and the binary's, and the versions a migrate would apply.
type migrationStatusJSON struct {
	Applied   int   `json:"applied"`
	Available int   `json:"available"`
	Pending   []int `json:"pending"`
	// Newer: the database was migrated by a newer lockctl (migrate refuses).
	Newer bool `json:"newer"`
	// Adopts: the first pending migration adopts the reference service's table.
	Adopts bool `json:"adopts"`
}

func printMigrationStatus(env Env, server string, s store.MigrationStatus, asJSON bool) int {
	if asJSON {
		out := migrationStatusJSON{Applied: s.Applied, Available: s.Available, Pending: []int{}, Newer: s.Newer(), Adopts: s.Adopts}
		for _, m := range s.Pending {
			out.Pending = append(out.Pending, m.Version)
		}
		if err := writeJSON(env.Stdout, out); err != nil {
			return env.Fail(err)
		}
		return ExitOK
	}
	fmt.Fprintf(env.Stdout, "%s: migration %d applied; this lockctl has up to %d\n", server, s.Applied, s.Available)
	switch {
	case s.Newer():
		fmt.Fprintln(env.Stdout, "the schema is newer than this lockctl: migrate refuses it; upgrade lockctl")
	case len(s.Pending) == 0:
		fmt.Fprintln(env.Stdout, "nothing pending")
	default:
		fmt.Fprintf(env.Stdout, "pending: %s\n", migrationList(s.Pending, s.Adopts))
	}
	return ExitOK
}

// printMigrationPlan is --dry-run: what Migrate would run, in order.
func printMigrationPlan(env Env, server string, s store.MigrationStatus) int {
	if s.Newer() {
		return env.Fail(fmt.Errorf("%w (it records migration %d; this one has up to %d)", locker.ErrSchemaNewer, s.Applied, s.Available))
	}
	fmt.Fprintf(env.Stdout, "migrate would, on %s:\n", server)
	for _, m := range s.Pending {
		fmt.Fprintf(env.Stdout, "  apply %s\n", migrationList([]store.Migration{m}, s.Adopts && m.Version == s.Pending[0].Version))
	}
	if len(s.Pending) == 0 {
		fmt.Fprintln(env.Stdout, "  apply no migration (all applied)")
	}
	fmt.Fprintln(env.Stdout, "  re-create the protocol functions and revoke EXECUTE on them from PUBLIC")
	fmt.Fprintln(env.Stdout, "nothing was changed (--dry-run)")
	return ExitOK
}

// migrationList names migrations as "001 initial_schema, 002 …"; adopts
// marks the first as adopting the reference service's table.
func migrationList(ms []store.Migration, adopts bool) string {
	names := make([]string, len(ms))
	for i, m := range ms {
		names[i] = fmt.Sprintf("%03d %s", m.Version, m.Name)
		if i == 0 && adopts {
			names[i] += " (adopting the reference service's distributed_lock)"
		}
	}
	return strings.Join(names, ", ")
}
