package testdb

import (
	"context"
	"testing"

	"github.com/lockctl/lockctl/internal/pgtemp"
)

// Server starts a throwaway server of the test's own (for tests that stop,
// crash or replicate it, which the shared one must not be), closed when the
// test ends. Without PostgreSQL the test skips, or fails under CI.
func Server(t testing.TB) *pgtemp.Instance {
	t.Helper()
	in, err := pgtemp.Start(context.Background(), pgtemp.Options{Fast: true, HandleSignals: true})
	if err != nil {
		Unavailable(t, "no PostgreSQL: %v", err)
	}
	t.Cleanup(func() { _ = in.Close() })
	return in
}

// Standby starts a streaming standby of primary, closed when the test ends.
func Standby(t testing.TB, primary *pgtemp.Instance) *pgtemp.Instance {
	t.Helper()
	in, err := pgtemp.StartStandby(context.Background(), primary, pgtemp.Options{Fast: true, HandleSignals: true})
	if err != nil {
		Unavailable(t, "no standby: %v", err)
	}
	t.Cleanup(func() { _ = in.Close() })
	return in
}
