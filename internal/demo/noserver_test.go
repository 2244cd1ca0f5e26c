package demo

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/lockctl/lockctl/internal/pgtemp"
)

// Without PostgreSQL's binaries and without --dsn, Run fails with one
// message that says what to install and that --dsn is the alternative.
func TestRunWithoutPostgreSQL(t *testing.T) {
	startServer = func(context.Context, pgtemp.Options) (*pgtemp.Instance, error) { return nil, pgtemp.ErrNoServer }
	t.Cleanup(func() { startServer = pgtemp.Start })
	var stderr bytes.Buffer
	err := Run(context.Background(), Options{Stderr: &stderr})
	if !errors.Is(err, ErrNoServer) {
		t.Fatalf("Run = %v, want ErrNoServer", err)
	}
	for _, want := range []string{"apt-get install postgresql", "brew install postgresql", "--dsn", Schema} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("message %q does not mention %q", err, want)
		}
	}
}
