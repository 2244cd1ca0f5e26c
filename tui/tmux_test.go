package tui

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lockctl/lockctl/internal/testdb"
)

// tmuxPane is the real lockctl binary running in a tmux pane. The command is
// wrapped so that, when the program ends, the pane prints its exit status
// and stays open to be read. Each pane has a tmux server of its own (-L
// session): on the shared default server, the parallel tests' sessions
// would come and go under one another (the server exits with its last
// session), and a developer's own tmux would get them too.
type tmuxPane struct {
	t       *testing.T
	session string
}

var paneSeq atomic.Int64

// startPane runs `lockctl args…` in a w x h tmux pane.
func startPane(t *testing.T, w, h int, args ...string) *tmuxPane {
	t.Helper()
	return startPaneEnv(t, w, h, nil, args...)
}

// startPaneEnv is startPane with env (VAR=value) added to lockctl's
// environment.
func startPaneEnv(t *testing.T, w, h int, env []string, args ...string) *tmuxPane {
	t.Helper()
	if testing.Short() {
		t.Skip("end-to-end")
	}
	if _, err := exec.LookPath("tmux"); err != nil {
		testdb.Unavailable(t, "tmux not installed")
	}
	quoted := []string{"env"}
	for _, e := range env {
		quoted = append(quoted, shellQuote(e))
	}
	quoted = append(quoted, shellQuote(sharedBinary(t)))
	for _, a := range args {
		quoted = append(quoted, shellQuote(a))
	}
	p := &tmuxPane{t: t, session: fmt.Sprintf("lockctl-test-%d-%d", os.Getpid(), paneSeq.Add(1))}
	p.tmux("new-session", "-d", "-s", p.session, "-x", fmt.Sprint(w), "-y", fmt.Sprint(h),
		strings.Join(quoted, " ")+`; echo "exit status $?"; sleep 600`)
	t.Cleanup(func() { _ = exec.Command("tmux", "-L", p.session, "kill-server").Run() })
	return p
}

func (p *tmuxPane) tmux(args ...string) string {
	p.t.Helper()
	out, err := exec.Command("tmux", append([]string{"-L", p.session}, args...)...).CombinedOutput()
	if err != nil {
		p.t.Fatalf("tmux %v: %v\n%s", args, err, out)
	}
	return string(out)
}

func (p *tmuxPane) screen() string { return p.tmux("capture-pane", "-p", "-t", p.session) }

// keys sends tmux key names ("q", "Enter", "Tab").
func (p *tmuxPane) keys(keys ...string) {
	p.tmux(append([]string{"send-keys", "-t", p.session}, keys...)...)
}

// waitFor returns the screen once it contains what, or fails the test.
func (p *tmuxPane) waitFor(what string, within time.Duration) string {
	p.t.Helper()
	return p.waitUntil(strconv.Quote(what), within, func(s string) bool { return strings.Contains(s, what) })
}

// waitUntil returns the screen once cond holds for it, or fails the test
// saying that what (the awaited text, described) did not appear.
func (p *tmuxPane) waitUntil(what string, within time.Duration, cond func(screen string) bool) string {
	p.t.Helper()
	var s string
	if !testdb.Within(within, func() bool { s = p.screen(); return cond(s) }) {
		p.t.Fatalf("no %s on screen within %s:\n%s", what, within, s)
	}
	return s
}

func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

var (
	binaryOnce sync.Once
	binaryPath string
	binaryErr  error
	binaryDir  string
)

// sharedBinary builds lockctl once for every test of this package;
// TestMain removes it.
func sharedBinary(t *testing.T) string {
	t.Helper()
	binaryOnce.Do(func() {
		binaryDir, binaryErr = os.MkdirTemp("", "lockctl-tui-test-")
		if binaryErr != nil {
			return
		}
		_, file, _, _ := runtime.Caller(0)
		cmd := exec.Command("go", "build", "-o", filepath.Join(binaryDir, "lockctl"), ".")
		cmd.Dir = filepath.Dir(filepath.Dir(file))
		cmd.Env = append(os.Environ(), "GOTOOLCHAIN=local")
		if out, err := cmd.CombinedOutput(); err != nil {
			binaryErr = fmt.Errorf("go build: %v\n%s", err, out)
			return
		}
		binaryPath = filepath.Join(binaryDir, "lockctl")
	})
	if binaryErr != nil {
		t.Fatal(binaryErr)
	}
	return binaryPath
}

func removeSharedBinary() {
	if binaryDir != "" {
		_ = os.RemoveAll(binaryDir)
	}
}
