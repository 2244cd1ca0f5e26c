package tui

import (
	"fmt"
	"os"
	"os/exec"
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
	if _, err := exec.LookPath("tmux"); err != nil {
		testdb.Unavailable(t, "tmux not installed")
	}
	bin := buildBinary(t)
	p := testdb.Bouncer(t, pgtemp.BouncerOptions{PoolSize: 2})
	if out, err := exec.Command(bin, "acquire", "pooled:lock", "--owner", "worker-1", "--ttl", "5m", "--dsn", p.DSN).CombinedOutput(); err != nil {
		t.Fatalf("acquire through the pooler: %v\n%s", err, out)
	}
	for _, c := range []struct {
		name, args, want string
	}{
		{"listen-through-pooler", "", "wake-ups not live (see --notify-dsn)"},
		{"notify-dsn-direct", " --notify-dsn '" + p.DirectDSN + "'", "wake-ups live"},
	} {
		t.Run(c.name, func(t *testing.T) {
			// A tmux server of its own: another test's ending server cannot
			// take this session with it.
			session := fmt.Sprintf("lockctl-pooler-%d-%s", os.Getpid(), c.name)
			cmd := bin + " --dsn '" + p.DSN + "'" + c.args + " --refresh 200ms"
			if out, err := exec.Command("tmux", "-L", session, "new-session", "-d", "-s", session, "-x", "140", "-y", "30", cmd).CombinedOutput(); err != nil {
				t.Fatalf("tmux: %v\n%s", err, out)
			}
			t.Cleanup(func() { _ = exec.Command("tmux", "-L", session, "kill-server").Run() })
			var screen string
			ok := testdb.Within(20*time.Second, func() bool {
				out, _ := exec.Command("tmux", "-L", session, "capture-pane", "-p", "-t", session).CombinedOutput()
				screen = string(out)
				return strings.Contains(screen, c.want) && strings.Contains(screen, "pooled:lock")
			})
			if !ok {
				t.Fatalf("no %q and pooled:lock on screen:\n%s", c.want, screen)
			}
			if strings.Contains(screen, "already exists") || strings.Contains(screen, "✗") {
				t.Fatalf("the console reports an error through the pooler:\n%s", screen)
			}
		})
	}
}
