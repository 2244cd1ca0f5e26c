package demo

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/lockctl/lockctl/internal/pgtemp"
	"github.com/lockctl/lockctl/internal/testdb"
)

// The demo refuses a DSN through PgBouncer, before it warns or creates
// anything: its guard and its schema would not hold there.
func TestRunRefusesAPooler(t *testing.T) {
	p := testdb.Bouncer(t, pgtemp.BouncerOptions{})
	var stderr bytes.Buffer
	err := Run(context.Background(), Options{DSN: p.DSN, Stderr: &stderr, WarnPause: time.Minute})
	if !errors.Is(err, ErrPooled) || !strings.Contains(err.Error(), "direct connection") {
		t.Fatalf("Run through PgBouncer = %v, want ErrPooled", err)
	}
	if strings.Contains(stderr.String(), "WARNING") {
		t.Fatalf("the demo warned it would start before refusing:\n%s", stderr.String())
	}
}
