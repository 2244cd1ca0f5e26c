package cli_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/lockctl/lockctl/internal/testdb"
)

// shellQuote quotes s for sh.
func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// On a terminal, a waiting acquire shows one line saying what it waits for
// and who holds it, and erases it when the wait ends. Without a terminal
// (every other test) stderr gets no such line.
func TestWaitProgressOnTerminal(t *testing.T) {
	t.Parallel()
	d := newDB(t)
	holder := d.json(0, "acquire", "k", "--owner", "holder-a", "--ttl", "1m")

	body := fmt.Sprintf("%s acquire k --owner b --wait 30s --dsn %s\necho \"exit=$?\"\nsleep 60\n",
		shellQuote(binary), shellQuote(d.dsn))
	_, waitFor := tmuxRun(t, "progress", body)
	waitFor(regexp.MustCompile(`lockctl acquire: waiting for k, \d+s of 30s; held by holder-a \(token \d+, expires in \S+\)`))

	d.json(0, "release", "k", "--owner", "holder-a", "--token", tokenArg(holder.Token))
	s := waitFor(regexp.MustCompile(`exit=0`))
	if strings.Contains(s, "waiting for") || !regexp.MustCompile(`(?m)^acquired k token=\d+ owner=b`).MatchString(s) {
		t.Fatalf("after the wait the screen is\n%s\nwant the progress line gone and the grant on a line of its own", s)
	}
}

// tmuxRun runs the shell script body in a 100x10 tmux pane and returns a
// function that sends keys to it and one that waits until the screen
// matches a pattern (and returns the screen).
func tmuxRun(t *testing.T, name, body string) (sendKeys func(keys ...string), waitFor func(*regexp.Regexp) string) {
	t.Helper()
	if _, err := exec.LookPath("tmux"); err != nil {
		testdb.Unavailable(t, "tmux not installed")
	}
	sh := filepath.Join(t.TempDir(), name+".sh")
	if err := os.WriteFile(sh, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	// A tmux server of this test's own (-S, its socket in the test's temp
	// directory, removed with it): when another test, here or in another
	// package, ends the last session of a shared server, the server exits
	// under whoever is connecting to it at that moment.
	socket := filepath.Join(filepath.Dir(sh), "tmux.sock")
	tmux := func(args ...string) (string, error) {
		out, err := exec.Command("tmux", append([]string{"-S", socket}, args...)...).CombinedOutput()
		return string(out), err
	}
	if out, err := tmux("new-session", "-d", "-s", name, "-x", "100", "-y", "10", "sh "+shellQuote(sh)); err != nil {
		t.Fatalf("tmux: %v\n%s", err, out)
	}
	t.Cleanup(func() { _, _ = tmux("kill-server") })
	screen := func() string {
		out, err := tmux("capture-pane", "-p", "-t", name)
		if err != nil {
			t.Fatalf("tmux capture-pane: %v\n%s", err, out)
		}
		return out
	}
	sendKeys = func(keys ...string) {
		if out, err := tmux(append([]string{"send-keys", "-t", name}, keys...)...); err != nil {
			t.Fatalf("tmux send-keys: %v\n%s", err, out)
		}
	}
	waitFor = func(re *regexp.Regexp) string {
		t.Helper()
		var s string
		if !testdb.Within(20*time.Second, func() bool { s = screen(); return re.MatchString(s) }) {
			t.Fatalf("no %s on screen:\n%s", re, s)
		}
		return s
	}
	return sendKeys, waitFor
}

// On a terminal ls --watch redraws the screen (one header, at the top)
// rather than scrolling listings past; Ctrl-C ends it with exit 0.
func TestLsWatchOnTerminal(t *testing.T) {
	t.Parallel()
	d := newDB(t)
	// The shell traps SIGINT so that Ctrl-C ends only lockctl, and it can
	// print lockctl's exit status.
	body := fmt.Sprintf("trap true INT\n%s ls --watch --interval 200ms --dsn %s\necho \"exit=$?\"\nsleep 60\n",
		shellQuote(binary), shellQuote(d.dsn))
	sendKeys, waitFor := tmuxRun(t, "watch", body)
	waitFor(regexp.MustCompile(`(?m)^Every 200ms: ls .*\n\nno locks`))
	d.json(0, "acquire", "watched", "--owner", "a")
	s := waitFor(regexp.MustCompile(`(?m)^watched +a +\d+ +held`))
	if !strings.HasPrefix(s, "Every 200ms: ls") || strings.Count(s, "Every 200ms") != 1 || strings.Contains(s, "no locks") {
		t.Fatalf("screen after a redraw:\n%s\nwant one listing under one header at the top", s)
	}
	sendKeys("C-c")
	waitFor(regexp.MustCompile(`exit=0`))
}
