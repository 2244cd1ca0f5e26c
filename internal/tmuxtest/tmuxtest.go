// Package tmuxtest runs a command in a tmux pane for end-to-end terminal
// tests: keys go in with send-keys, the screen comes out with
// capture-pane. Each pane has a tmux server of its own (-L), so parallel
// tests and a developer's own tmux never see one another's sessions.
package tmuxtest

import (
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lockctl/lockctl/internal/testdb"
)

// Pane is one command running in a tmux pane. When the command ends, the
// pane prints "exit status N" and stays open to be read.
type Pane struct {
	t      testing.TB
	server string
}

var seq atomic.Int64

// Start runs argv in a w x h pane; env entries (KEY=value) are set for it.
// Without tmux the test fails under CI=true and is skipped elsewhere.
func Start(t testing.TB, w, h int, env []string, argv ...string) *Pane {
	t.Helper()
	if _, err := exec.LookPath("tmux"); err != nil {
		testdb.Unavailable(t, "tmux not installed")
	}
	quoted := make([]string, 0, len(env)+len(argv))
	for _, e := range env {
		quoted = append(quoted, Quote(e))
	}
	if len(env) > 0 {
		quoted = append([]string{"env"}, quoted...)
	}
	for _, a := range argv {
		quoted = append(quoted, Quote(a))
	}
	p := &Pane{t: t, server: fmt.Sprintf("lockctl-tmuxtest-%d-%d", os.Getpid(), seq.Add(1))}
	p.Tmux("new-session", "-d", "-s", "test", "-x", strconv.Itoa(w), "-y", strconv.Itoa(h),
		strings.Join(quoted, " ")+`; echo "exit status $?"; sleep 600`)
	t.Cleanup(func() { _ = exec.Command("tmux", "-L", p.server, "kill-server").Run() })
	return p
}

// Tmux runs a tmux command against the pane's server.
func (p *Pane) Tmux(args ...string) string {
	p.t.Helper()
	out, err := exec.Command("tmux", append([]string{"-L", p.server}, args...)...).CombinedOutput()
	if err != nil {
		p.t.Fatalf("tmux %v: %v\n%s", args, err, out)
	}
	return string(out)
}

// Screen is what the pane shows now.
func (p *Pane) Screen() string { return p.Tmux("capture-pane", "-p", "-t", "test") }

// Keys sends tmux key names ("q", "Enter", "Tab").
func (p *Pane) Keys(keys ...string) { p.Tmux(append([]string{"send-keys", "-t", "test"}, keys...)...) }

// WaitFor returns the screen once it contains what, or fails the test.
func (p *Pane) WaitFor(what string, within time.Duration) string {
	p.t.Helper()
	return p.WaitUntil(strconv.Quote(what), within, func(s string) bool { return strings.Contains(s, what) })
}

// WaitUntil returns the screen once cond holds for it, or fails the test
// saying that what (the awaited text, described) did not appear.
func (p *Pane) WaitUntil(what string, within time.Duration, cond func(screen string) bool) string {
	p.t.Helper()
	var s string
	if !testdb.Within(within, func() bool { s = p.Screen(); return cond(s) }) {
		p.t.Fatalf("no %s on screen within %s:\n%s", what, within, s)
	}
	return s
}

// Quote quotes s for the shell.
func Quote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }
