package demo

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os/signal"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/lockctl/lockctl/internal/cli"
	"github.com/lockctl/lockctl/internal/operator"
	"github.com/lockctl/lockctl/internal/pgtemp"
	"github.com/lockctl/lockctl/internal/textsafe"
	"github.com/lockctl/lockctl/locker"
	"github.com/lockctl/lockctl/store"
)

// Options configure Run.
type Options struct {
	Config
	// DSN names an existing database to run in (schema Schema, created if
	// missing). "" starts a private throwaway server, removed on return.
	DSN string
	// Refresh is the console's poll interval. Defaults to 500ms.
	Refresh time.Duration
	// ReadOnly removes the console's actions.
	ReadOnly bool
	// Theme is the console's palette (tui.Themes; "": auto).
	Theme string
	// Actor is recorded on the events of the console's operator actions.
	// Defaults to operator.DefaultActor().
	Actor string
	// Stderr receives progress and the warning about an existing database.
	// nil discards them.
	Stderr io.Writer
	// WarnPause is how long the warning about an existing database stays
	// up before the console covers it. Defaults to 2s.
	WarnPause time.Duration
}

// Schema is where the demo runs on an existing database (--dsn).
const Schema = "lockctl_demo"

// createSchemaSQL makes the demo's schema on an existing database. DDL
// takes no parameters; the name is the constant above.
const createSchemaSQL = `CREATE SCHEMA IF NOT EXISTS ` + Schema

// ErrNoServer is returned when there is no PostgreSQL to start and no --dsn.
var ErrNoServer = errors.New("no PostgreSQL server binaries found (looked in PATH, `pg_config --bindir` and /usr/lib/postgresql/*/bin). " +
	"Install PostgreSQL's server (e.g. `apt-get install postgresql` or `brew install postgresql`, or set PG_BINDIR to its bin directory), " +
	"or run the demo on an existing database with `lockctl demo --dsn URL` (it then works in its own schema, " + Schema + ")")

// startServer is pgtemp.Start; a test replaces it to play a machine
// without PostgreSQL.
var startServer = pgtemp.Start

// Run starts the database (a private server, or Schema on o.DSN), applies
// the schema, starts the simulation and opens the console on it. It returns
// when the console quits or ctx ends, after stopping the workers and — for a
// private server — stopping the server and removing its directory, on every
// path out. Being interrupted (ctx ending) is a normal way out: nil.
func Run(ctx context.Context, o Options) error {
	// A closed terminal (SIGHUP) must still stop the private server and
	// remove its directory; the caller handles SIGINT and SIGTERM.
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGHUP)
	defer stop()
	err := run(ctx, o)
	if err != nil && ctx.Err() != nil {
		return nil
	}
	return err
}

func run(ctx context.Context, o Options) error {
	if err := o.Config.Validate(); err != nil {
		return err
	}
	if o.Refresh == 0 {
		o.Refresh = 500 * time.Millisecond
	}
	if o.WarnPause == 0 {
		o.WarnPause = 2 * time.Second
	}
	if o.Stderr == nil {
		o.Stderr = io.Discard
	}
	cfg := o.Config.withDefaults()

	dsn, where := o.DSN, ""
	if dsn == "" {
		fmt.Fprintln(o.Stderr, "lockctl demo: starting a private PostgreSQL server (removed when you quit) …")
		srv, err := startServer(ctx, pgtemp.Options{Fast: true})
		if errors.Is(err, pgtemp.ErrNoServer) {
			return ErrNoServer
		}
		if err != nil {
			return err
		}
		defer func() {
			_ = srv.Close()
			fmt.Fprintln(o.Stderr, "lockctl demo: private PostgreSQL server stopped and removed")
		}()
		dsn, where = srv.DSN(""), " (private demo server)"
	}
	var warn func(server string) error
	if o.DSN != "" {
		where = " schema " + Schema
		// Said before anything is created, with time to cancel.
		warn = func(server string) error {
			fmt.Fprintf(o.Stderr, "lockctl demo: WARNING: simulated workers will take locks on %s, in schema %s only\n"+
				"  (created if missing: lock tables and the demo_resource and demo_account tables; remove them with DROP SCHEMA %s CASCADE).\n"+
				"  Starting in %s; ctrl+c to cancel.\n",
				server, Schema, Schema, o.WarnPause)
			if !sleep(ctx, o.WarnPause) {
				return ctx.Err()
			}
			return nil
		}
	}
	pool, server, err := open(ctx, dsn, cfg.Workers, warn)
	if err != nil {
		return err
	}
	defer pool.Close()
	if o.DSN != "" {
		release, err := claimSchema(ctx, pool)
		if err != nil {
			return err
		}
		defer release()
	}
	if err := locker.Migrate(ctx, pool); err != nil {
		return fmt.Errorf("demo: apply schema: %w", err)
	}
	sim, err := Start(ctx, pool, cfg)
	if err != nil {
		return err
	}
	defer sim.Stop()
	lk, err := locker.New(locker.Config{Actor: o.Actor})
	if err != nil {
		return err
	}
	op, err := operator.New(o.Actor)
	if err != nil {
		return err
	}
	err = console(ctx, consoleOptions{
		pool: pool, locker: lk, operator: op, server: server + where,
		refresh: o.Refresh, readOnly: o.ReadOnly, theme: o.Theme, status: sim.Status,
	})
	sim.Stop()
	fmt.Fprintf(o.Stderr, "lockctl demo: workers stopped, their locks released. %s\n", sim.Status())
	if d, ok := sim.LastDeadlock(); ok {
		// The cycle's owners and keys come from the database.
		fmt.Fprintf(o.Stderr, "  Latest deadlock, reported %s after the wait that closed it: %s\n",
			d.After.Round(time.Millisecond), textsafe.Escape(d.Err.Error()))
	}
	fmt.Fprintf(o.Stderr, "  Replay this story with: lockctl demo --seed %d\n", sim.Seed())
	return err
}

// open connects with cli.Connect (its errors name the server and never the
// password) and returns a pool sized for the cast. With inSchema set (an
// existing database) it first calls inSchema with the server's name, then
// creates Schema and confines the pool to it.
func open(ctx context.Context, dsn string, workers int, inSchema func(server string) error) (*pgxpool.Pool, string, error) {
	probe, err := cli.Connect(ctx, dsn)
	if err != nil {
		return nil, "", err
	}
	cfg := probe.Config()
	server := cli.ServerName(cfg.ConnConfig)
	if err := refusePooler(ctx, probe, server); err != nil {
		probe.Close()
		return nil, "", err
	}
	if inSchema != nil {
		if err := inSchema(server); err != nil {
			probe.Close()
			return nil, "", err
		}
		if _, err := probe.Exec(ctx, createSchemaSQL); err != nil {
			probe.Close()
			return nil, "", fmt.Errorf("demo: create schema %s: %w", Schema, store.Interpret(err))
		}
		cfg.ConnConfig.RuntimeParams["search_path"] = Schema
	}
	probe.Close()
	// Every worker renews and writes on this pool; a pool too small would
	// make renewals queue for a connection past their lease. The fixed
	// cast is 23 workers.
	cfg.MaxConns = int32(min(64, 33+workers))
	cfg.ConnConfig.RuntimeParams["application_name"] = "lockctl demo"
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, "", fmt.Errorf("demo: %w", err)
	}
	return pool, server, nil
}

// claimSQL takes a session-level advisory lock that marks Schema as in use
// by a demo: two demos in one schema would share owner ids and each believe
// it holds the other's locks.
const claimSQL = `SELECT pg_try_advisory_lock(hashtext('lockctl demo'), hashtext(current_schema()))`

// claimSchema holds the claim on a connection of its own (a session lock on
// a pooled connection would outlive the demo) until release is called.
func claimSchema(ctx context.Context, pool *pgxpool.Pool) (release func(), err error) {
	conn, err := pgx.ConnectConfig(ctx, pool.Config().ConnConfig)
	if err != nil {
		return nil, fmt.Errorf("demo: %w", store.Interpret(err))
	}
	var ok bool
	if err := conn.QueryRow(ctx, claimSQL).Scan(&ok); err != nil {
		_ = conn.Close(ctx)
		return nil, fmt.Errorf("demo: %w", store.Interpret(err))
	}
	if !ok {
		_ = conn.Close(ctx)
		return nil, fmt.Errorf("another lockctl demo is running in schema %s of this database; stop it first", Schema)
	}
	return func() { _ = conn.Close(context.WithoutCancel(ctx)) }, nil
}
