package bench

import (
	"context"
	"os"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/lockctl/lockctl/internal/pgtemp"
)

// profiling skips the test unless LOCKCTL_BENCH_PROFILE is set: the
// profile_*_test.go experiments take minutes and print the figures quoted in
// BENCHMARKS.md; they assert nothing a CI run needs.
func profiling(t *testing.T, what string) {
	t.Helper()
	if os.Getenv("LOCKCTL_BENCH_PROFILE") == "" {
		t.Skip("set LOCKCTL_BENCH_PROFILE=1 to " + what)
	}
}

// profileServer starts a private server with opts (durable commits unless
// opts says otherwise), opens a benchmark target of conns connections and one
// more connection for probes, and closes all of them when the test ends.
func profileServer(t *testing.T, opts pgtemp.Options, conns int) (*target, *pgx.Conn) {
	t.Helper()
	ctx := context.Background()
	opts.HandleSignals = true
	srv, err := pgtemp.Start(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	tg, err := openTarget(ctx, srv.DSN(""), conns)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tg.close(ctx) })
	conn, err := pgx.Connect(ctx, srv.DSN(""))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close(ctx) })
	return tg, conn
}

// oneBackend starts a private server with synchronous_commit off (so the
// disk does not blur CPU figures) and a target of one connection, so that
// every statement runs on the backend whose pid it returns.
func oneBackend(t *testing.T) (*target, int32) {
	t.Helper()
	tg, _ := profileServer(t, pgtemp.Options{Settings: map[string]string{"synchronous_commit": "off"}}, 1)
	var pid int32
	if err := tg.pool.QueryRow(context.Background(), `SELECT pg_backend_pid()`).Scan(&pid); err != nil {
		t.Fatal(err)
	}
	return tg, pid
}
