package cli

import (
	"context"
	"fmt"
	"unicode"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
	"github.com/spf13/cobra"

	"github.com/lockctl/lockctl/internal/roles"
	"github.com/lockctl/lockctl/internal/textsafe"
	"github.com/lockctl/lockctl/locker"
	"github.com/lockctl/lockctl/store"
)

// GrantCommand is `lockctl grant ROLE`.
func GrantCommand() *cobra.Command {
	var o GrantOptions
	cmd := &cobra.Command{
		Use:   "grant ROLE",
		Short: "give ROLE the least-privilege grants of --as viewer, operator or service on the lock tables (--print: show the SQL)",
		RunE: RunE(func(ctx context.Context, env Env, args []string) int {
			o.Role = args[0]
			return Grant(ctx, env, o)
		}),
	}
	fs := cmd.Flags()
	EnumVar(fs, &o.Kind, "as", GrantKinds, "grant `set`: viewer (read), operator (read, force, prune) or service (hold locks)")
	fs.StringVar(&o.Schema, "schema", "", "`schema` of the lock tables (default: the connection's current schema; public with --print)")
	fs.BoolVar(&o.Print, "print", false, "print the SQL instead of running it")
	Required(fs, "as")
	return cmd
}

// GrantKinds are the values `grant --as` accepts: the grant sets of
// internal/roles, so a new set needs no second list here.
var GrantKinds = kindNames(roles.Kinds)

func kindNames(kinds []roles.Kind) []string {
	names := make([]string, len(kinds))
	for i, k := range kinds {
		names[i] = string(k)
	}
	return names
}

// GrantOptions are grant's flags and argument.
type GrantOptions struct {
	Role   string
	Kind   string // one of GrantKinds; its flag rejects any other value
	Schema string // "": the connection's current schema (with --print: public)
	Print  bool   // print the SQL instead of running it
}

// Grant gives Role the least-privilege grant set of Kind on the lock
// objects (internal/roles), in one transaction, or with Print shows the
// statements for a DBA to run. It refuses, as migrate does, a lock schema
// open to other roles (store.CheckLockSchema). Each set first revokes what the role held on
// the lock objects, so running it again, or with another kind, leaves the
// role with exactly that set.
func Grant(ctx context.Context, env Env, opts GrantOptions) int {
	if err := opts.check(); err != nil {
		return env.Fail(err)
	}
	if opts.Print {
		schema := opts.Schema
		if schema == "" {
			schema = "public"
		}
		sql, err := roles.GrantSQL(roles.Kind(opts.Kind), schema, opts.Role)
		if err != nil {
			return env.Fail(err)
		}
		fmt.Fprint(env.Stdout, sql)
		return ExitOK
	}
	pool, err := Connect(ctx, env.DSN)
	if err != nil {
		return env.Fail(err)
	}
	defer pool.Close()
	schema := opts.Schema
	if schema == "" {
		var current *string
		if err := pool.QueryRow(ctx, `SELECT current_schema()`).Scan(&current); err != nil {
			return env.Fail(store.Interpret(err))
		}
		if current == nil {
			return env.Fail(fmt.Errorf("no schema of search_path exists: %w", locker.ErrNotMigrated))
		}
		schema = *current
	}
	stmts, err := roles.Statements(roles.Kind(opts.Kind), schema, opts.Role)
	if err != nil {
		return env.Fail(err)
	}
	err = pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		// A role granted the protocol could then run code another role
		// made there as the lock tables' owner.
		if err := store.CheckLockSchema(ctx, tx, schema); err != nil {
			return err
		}
		for _, s := range stmts {
			if _, err := tx.Exec(ctx, s); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return env.Fail(fmt.Errorf("grant %s to %s on schema %s: %w", opts.Kind, opts.Role, schema, store.Interpret(err)))
	}
	fmt.Fprintf(env.Stdout, "granted %s to %s on schema %s\n", opts.Kind, textsafe.Escape(opts.Role), textsafe.Escape(schema))
	return ExitOK
}

// check validates what the flag types cannot, before connecting; --as is
// already one of GrantKinds (EnumVar).
func (o GrantOptions) check() error {
	if err := validIdentifier(o.Role); err != nil {
		return usagef("invalid ROLE: %w", err)
	}
	if o.Schema != "" {
		if err := validIdentifier(o.Schema); err != nil {
			return usagef("invalid --schema: %w", err)
		}
	}
	return nil
}

// validIdentifier accepts a name PostgreSQL keeps as given: 1–63 bytes
// (longer names are cut silently, so a grant would go to another name) of
// printable UTF-8, so --print never writes control characters.
func validIdentifier(s string) error {
	switch {
	case s == "":
		return fmt.Errorf("empty")
	case len(s) > 63:
		return fmt.Errorf("%d bytes; PostgreSQL names are at most 63", len(s))
	case !utf8.ValidString(s):
		return fmt.Errorf("not valid UTF-8")
	}
	for _, r := range s {
		if !unicode.IsPrint(r) {
			return fmt.Errorf("contains the unprintable character %U", r)
		}
	}
	return nil
}
