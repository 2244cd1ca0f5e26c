package tui

import (
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lockctl/lockctl/internal/pgtemp"
	"github.com/lockctl/lockctl/internal/testdb"
)

// TestConsoleThroughPooler runs the real console through PgBouncer in
// transaction mode: it polls and acts through the pooler, and its header
// says whether release notifications arrive: not when it LISTENs through
// the pooler, yes with a direct --notify-dsn.
func TestConsoleThroughPooler(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end")
	}
	p := testdb.Bouncer(t, pgtemp.BouncerOptions{PoolSize: 2})
	if out, err := exec.Command(sharedBinary(t), "acquire", "pooled:lock", "--owner", "worker-1", "--ttl", "5m", "--dsn", p.DSN).CombinedOutput(); err != nil {
		t.Fatalf("acquire through the pooler: %v\n%s", err, out)
	}
	for _, c := range []struct {
		name string
		args []string
		want string
	}{
		{"listen-through-pooler", nil, "wake-ups not live (see --notify-dsn)"},
		{"notify-dsn-direct", []string{"--notify-dsn", p.DirectDSN}, "wake-ups live"},
	} {
		t.Run(c.name, func(t *testing.T) {
			pane := startPane(t, 140, 30, append(append([]string{"--dsn", p.DSN}, c.args...), "--refresh", "200ms")...)
			screen := pane.waitUntil(strconv.Quote(c.want)+" and pooled:lock", 20*time.Second, func(s string) bool {
				return strings.Contains(s, c.want) && strings.Contains(s, "pooled:lock")
			})
			if strings.Contains(screen, "already exists") || strings.Contains(screen, "✗") {
				t.Fatalf("the console reports an error through the pooler:\n%s", screen)
			}
		})
	}
}
