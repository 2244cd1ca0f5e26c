// Package testdb gives tests a real PostgreSQL: the server named by
// TEST_DATABASE_URL, or else one throwaway server per test binary (pgtemp).
// Each call to New makes a fresh schema with lockctl's tables in it, so tests
// are isolated from each other and can run in parallel.
//
// Tests do not sleep to let time pass: Clock moves a test schema's time
// (the protocol's one clock, distributed_lock_now, which every function and
// reader of the schema reads), AgeLock and ExpireLease move one lock row
// into the past on that clock, and Eventually, Within, WaitUntilBlocked and
// WaitUntilPast wait for a state the test can observe.
//
// Without a server, tests skip — except under CI=true, where they fail: CI
// must never pass by skipping the database tests.
package testdb

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/lockctl/lockctl/internal/pgtemp"
	"github.com/lockctl/lockctl/store"
)

// EnvURL names an existing server to test against instead of a throwaway one.
const EnvURL = "TEST_DATABASE_URL"

var (
	startOnce sync.Once
	baseDSN   string
	startErr  error
	server    *pgtemp.Instance
	schemaSeq atomic.Int64
)

// Main runs the tests and then stops the throwaway server, if one was
// started. Use it from TestMain: os.Exit(testdb.Main(m)). m is a
// *testing.M, or a wrapper whose Run closes what the tests shared once
// they have run, while the server is still up.
func Main(m interface{ Run() int }) int {
	code := m.Run()
	if server != nil {
		_ = server.Close()
	}
	return code
}

func base(t testing.TB) string {
	t.Helper()
	startOnce.Do(func() {
		if url := os.Getenv(EnvURL); url != "" {
			baseDSN = url
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		server, startErr = pgtemp.Start(ctx, pgtemp.Options{
			Fast:          true,
			HandleSignals: true,
			Settings:      map[string]string{"max_connections": "300"},
		})
		if startErr == nil {
			baseDSN = server.DSN("")
		}
	})
	if startErr != nil {
		Unavailable(t, "no PostgreSQL for tests (set %s or install the server): %v", EnvURL, startErr)
	}
	return baseDSN
}

// DSN makes a fresh, migrated schema and returns a connection URL whose
// search_path points at it, for tests that run the binary or open their own
// connections.
func DSN(t testing.TB) string {
	t.Helper()
	return newSchema(t, true)
}

// EmptyDSN is DSN without the lock tables: an unmigrated database.
func EmptyDSN(t testing.TB) string {
	t.Helper()
	return newSchema(t, false)
}

// New returns a pool on a fresh, migrated schema, closed when the test ends.
func New(t testing.TB) *pgxpool.Pool {
	t.Helper()
	return Pool(t, DSN(t))
}

// Pool opens a pool on dsn, closed when the test ends. It holds up to 40
// connections, room for the parallel contention tests, unless dsn sets
// pool_max_conns.
func Pool(t testing.TB, dsn string) *pgxpool.Pool {
	t.Helper()
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(dsn, "pool_max_conns=") {
		cfg.MaxConns = 40
	}
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return pool
}

func newSchema(t testing.TB, migrate bool) string {
	t.Helper()
	dsn := base(t)
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatalf("connect to test database: %v", err)
	}
	defer conn.Close(ctx)
	name := fmt.Sprintf("t%d_%d", os.Getpid(), schemaSeq.Add(1))
	if _, err := conn.Exec(ctx, "CREATE SCHEMA "+pgx.Identifier{name}.Sanitize()); err != nil {
		t.Fatalf("create schema: %v", err)
	}
	scoped := withSearchPath(dsn, name)
	if migrate {
		migrateAs(t, scoped)
	}
	return scoped
}

// migrateAs creates lockctl's tables where dsn's connection puts them (its
// search_path, or its role's). Failures do not print dsn: a
// TEST_DATABASE_URL may carry a password.
func migrateAs(t testing.TB, dsn string) {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatalf("connect to migrate the test schema: %v", err)
	}
	defer conn.Close(ctx)
	if err := store.Migrate(ctx, conn); err != nil {
		t.Fatalf("migrate the test schema: %v", err)
	}
}

// withSearchPath adds a search_path runtime parameter to a URL or a
// keyword/value connection string.
func withSearchPath(dsn, schema string) string { return WithParam(dsn, "search_path", schema) }

// WithParam adds a runtime parameter (a plain value: no spaces, quotes or
// URL escapes) to a URL or a keyword/value connection string.
func WithParam(dsn, name, value string) string {
	switch {
	case !strings.Contains(dsn, "://"):
		return dsn + " " + name + "=" + value
	case strings.Contains(dsn, "?"):
		return dsn + "&" + name + "=" + value
	default:
		return dsn + "?" + name + "=" + value
	}
}

// Unavailable reports that something a test needs (a server, tmux, …) is
// missing: the test skips, except under CI=true, where it fails, so CI never
// passes by not running a test.
func Unavailable(t testing.TB, format string, args ...any) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatalf("CI=true, so this fails rather than skips: "+format, args...)
	}
	t.Skipf(format, args...)
}
