package testdb

import (
	"context"
	"errors"
	"testing"

	"github.com/lockctl/lockctl/internal/pgtemp"
)

// Server starts a throwaway server of the test's own (for tests that stop,
// crash or replicate it, which the shared one must not be), closed when the
// test ends. Without PostgreSQL the test skips, or fails under CI; a server
// that is installed but does not start fails the test.
func Server(t testing.TB) *pgtemp.Instance {
	t.Helper()
	return ServerWith(t, nil)
}

// ServerWith is Server with extra postgresql.conf settings (e.g.
// shared_preload_libraries).
func ServerWith(t testing.TB, settings map[string]string) *pgtemp.Instance {
	t.Helper()
	in, err := pgtemp.Start(context.Background(), pgtemp.Options{Fast: true, HandleSignals: true, Settings: settings})
	if errors.Is(err, pgtemp.ErrNoServer) {
		Unavailable(t, "no PostgreSQL: %v", err)
	}
	if err != nil {
		t.Fatalf("start a throwaway server: %v", err)
	}
	t.Cleanup(func() { _ = in.Close() })
	return in
}

// Standby starts a streaming standby of primary, closed when the test ends.
// The primary running shows the server is installed, so any failure to
// start the standby fails the test.
func Standby(t testing.TB, primary *pgtemp.Instance) *pgtemp.Instance {
	t.Helper()
	in, err := pgtemp.StartStandby(context.Background(), primary, pgtemp.Options{Fast: true, HandleSignals: true})
	if err != nil {
		t.Fatalf("start a standby: %v", err)
	}
	t.Cleanup(func() { _ = in.Close() })
	return in
}
