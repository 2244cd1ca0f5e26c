package cli_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/lockctl/lockctl/internal/testdb"
)

// started is a lockctl process running in the background.
type started struct {
	t              *testing.T
	cmd            *exec.Cmd
	stdout, stderr *lockedBuffer
	exited         chan struct{}
}

// lockedBuffer collects a process's output while the test reads it.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// start runs lockctl with args in the background, within 60s.
func (d db) start(args ...string) *started {
	d.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	d.t.Cleanup(cancel)
	cmd := exec.CommandContext(ctx, binary, d.withDSN(args)...)
	cmd.Env = cleanEnv()
	s := &started{t: d.t, cmd: cmd, stdout: new(lockedBuffer), stderr: new(lockedBuffer), exited: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = s.stdout, s.stderr
	if err := cmd.Start(); err != nil {
		d.t.Fatal(err)
	}
	go func() {
		_ = cmd.Wait()
		close(s.exited)
	}()
	return s
}

// wait waits for the process to end and returns its result.
func (s *started) wait() result {
	s.t.Helper()
	<-s.exited
	return result{code: s.cmd.ProcessState.ExitCode(), stdout: s.stdout.String(), stderr: s.stderr.String()}
}

// waitForOutput waits until stdout holds want, failing if lockctl exits
// first.
func (s *started) waitForOutput(want string) { s.t.Helper(); s.waitFor(s.stdout, want) }

// waitForStderr waits until stderr holds want and returns stderr.
func (s *started) waitForStderr(want string) string {
	s.t.Helper()
	s.waitFor(s.stderr, want)
	return s.stderr.String()
}

func (s *started) waitFor(out *lockedBuffer, want string) {
	s.t.Helper()
	s.until(fmt.Sprintf("printing %q", want), func() bool { return strings.Contains(out.String(), want) })
}

// until waits until cond holds, failing if lockctl exits first or it takes
// over 30s.
func (s *started) until(what string, cond func() bool) {
	s.t.Helper()
	exited := false
	testdb.Within(30*time.Second, func() bool {
		select {
		case <-s.exited: // looked at before cond: what it printed before exiting counts
			exited = true
		default:
		}
		return exited || cond()
	})
	switch {
	case cond():
	case exited:
		s.t.Fatalf("lockctl exited before %s:\n%s", what, s.wait())
	default:
		s.t.Fatalf("lockctl not %s within 30s:\n%s", what, result{stdout: s.stdout.String(), stderr: s.stderr.String()})
	}
}

// waitForFile waits until path exists, failing if lockctl exits first.
func (s *started) waitForFile(path string) {
	s.t.Helper()
	s.until(path+" appearing", func() bool { _, err := os.Stat(path); return err == nil })
}

// script is a shell command for `run`: $DIR is replaced by dir, quoted.
func script(dir, body string) []string {
	return []string{"sh", "-c", strings.ReplaceAll(body, "$DIR", "'"+dir+"'")}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// The command sees the lease in its environment, holds the key while it
// runs, and lockctl exits with its status and releases the key after.
func TestRunHoldsKeyWhileCommandRuns(t *testing.T) {
	t.Parallel()
	d := newDB(t)
	dir := t.TempDir()
	body := `echo "$LOCKCTL_KEY $LOCKCTL_OWNER $LOCKCTL_TOKEN"
"` + binary + `" acquire job --owner intruder --dsn "` + d.dsn + `" 2>/dev/null; echo "intruder=$?"
exit 7`
	r := d.expect(7, append([]string{"run", "job", "--owner", "runner", "--"}, script(dir, body)...)...)
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	fields := strings.Fields(lines[0])
	if len(lines) != 2 || len(fields) != 3 || fields[0] != "job" || fields[1] != "runner" || lines[1] != "intruder=3" {
		t.Fatalf("command printed %q; want the key, owner and token, then intruder=3 (held)", r.stdout)
	}
	token, err := strconv.ParseInt(fields[2], 10, 64)
	if err != nil || token <= 0 {
		t.Fatalf("LOCKCTL_TOKEN=%q; want a positive token", fields[2])
	}
	// Released, not left to expire: the next owner acquires (no steal).
	next := d.json(0, "acquire", "job", "--owner", "next")
	if next.Outcome != "acquired" || next.Token <= token {
		t.Fatalf("acquire after run = %+v; want acquired with a token above %d", next, token)
	}
}

// A command killed by a signal gives 128+signal, as in a shell.
func TestRunExitStatusOfSignalledCommand(t *testing.T) {
	t.Parallel()
	d := newDB(t)
	d.expect(128+int(syscall.SIGKILL), "run", "k", "--", "sh", "-c", "kill -KILL $$")
}

func TestRunRefusals(t *testing.T) {
	t.Parallel()
	d := newDB(t)
	dir := t.TempDir()
	marker := filepath.Join(dir, "ran")
	d.json(0, "acquire", "busy", "--owner", "a", "--ttl", "1m")

	r := d.expect(3, append([]string{"run", "busy", "--owner", "b", "--"}, script(dir, "touch $DIR/ran")...)...)
	if !strings.Contains(r.stderr, "busy is held by a") {
		t.Fatalf("run on a held key: %s\nwant the holder named", r)
	}
	r = d.expect(3, append([]string{"run", "busy", "--owner", "b", "--wait", "200ms", "--"}, script(dir, "touch $DIR/ran")...)...)
	if !strings.Contains(r.stderr, "gave up after waiting 200ms") {
		t.Fatalf("run --wait on a held key: %s", r)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("the command ran although the key was held")
	}

	r = d.expect(127, "run", "free", "--owner", "b", "--", filepath.Join(dir, "no-such-command"))
	if !strings.Contains(r.stderr, "no-such-command") {
		t.Fatalf("run of a missing command: %s", r)
	}
	// The lease taken for it was given back.
	if got := d.json(0, "acquire", "free", "--owner", "c"); got.Outcome != "acquired" {
		t.Fatalf("acquire after a failed start = %+v; want acquired", got)
	}
}

// Force-expiring the key while the command runs: at its next renewal
// lockctl finds the lease gone, sends the command SIGTERM, and exits 4
// saying so.
func TestRunStopsCommandWhenLeaseIsLost(t *testing.T) {
	t.Parallel()
	d := newDB(t)
	dir := t.TempDir()
	p := d.start(append([]string{"run", "k", "--ttl", "3s", "--grace", "20s", "--"},
		script(dir, `trap 'echo term > $DIR/term; exit 9' TERM; touch $DIR/started; while :; do sleep 0.1; done`)...)...)
	p.waitForFile(filepath.Join(dir, "started"))
	d.json(0, "expire", "k", "--actor", "ops")

	r := p.wait()
	if r.code != 4 || !strings.Contains(r.stderr, "lost the lease on k") ||
		!strings.Contains(r.stderr, "force-expired by ops") ||
		!strings.Contains(r.stderr, "exited (status 9) after SIGTERM") {
		t.Fatalf("%s\nwant exit 4, the lease loss explained, the command's status after SIGTERM", r)
	}
	if got := readFile(t, filepath.Join(dir, "term")); got != "term\n" {
		t.Fatalf("the command's TERM trap wrote %q", got)
	}
}

// With several keys, losing one names that one: the message and the
// reason are the key's that was force-expired, not the first key's.
func TestRunNamesTheKeyItLost(t *testing.T) {
	t.Parallel()
	d := newDB(t)
	dir := t.TempDir()
	p := d.start(append([]string{"run", "k1", "k2", "--ttl", "3s", "--grace", "20s", "--"},
		script(dir, `trap 'exit 9' TERM; touch $DIR/started; while :; do sleep 0.1; done`)...)...)
	p.waitForFile(filepath.Join(dir, "started"))
	d.json(0, "expire", "k2", "--actor", "ops")

	r := p.wait()
	if r.code != 4 || !strings.Contains(r.stderr, "lost the lease on k2") || !strings.Contains(r.stderr, "force-expired by ops") {
		t.Fatalf("%s\nwant exit 4 naming k2, force-expired by ops", r)
	}
}

// A command that ignores SIGTERM is killed after --grace, with everything
// it started (its process group).
func TestRunKillsCommandThatIgnoresTerm(t *testing.T) {
	t.Parallel()
	d := newDB(t)
	dir := t.TempDir()
	p := d.start(append([]string{"run", "k", "--ttl", "3s", "--grace", "300ms", "--"},
		script(dir, `trap '' TERM; sleep 600 & echo $! > $DIR/grandchild; touch $DIR/started; while :; do sleep 0.1; done`)...)...)
	p.waitForFile(filepath.Join(dir, "started"))
	d.json(0, "expire", "k")

	r := p.wait()
	if r.code != 4 || !strings.Contains(r.stderr, "lost the lease on k") || !strings.Contains(r.stderr, "killed (SIGKILL)") {
		t.Fatalf("%s\nwant exit 4 and the command killed after the grace", r)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(readFile(t, filepath.Join(dir, "grandchild"))))
	if err != nil {
		t.Fatal(err)
	}
	// The grandchild was killed with the group; it may linger as a zombie
	// until init reaps it, so ask for its state rather than its existence.
	testdb.Eventually(t, 10*time.Second, "the command's child gone with its group", func() bool { return !alive(pid) })
}

// alive says whether pid runs (and is not a zombie).
func alive(pid int) bool {
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return !errors.Is(err, os.ErrNotExist) && syscall.Kill(pid, 0) == nil
	}
	// The state follows the command name in parentheses: "pid (comm) S ...".
	s := string(stat)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || s[i+2] != 'Z'
}

// SIGINT, SIGTERM and SIGHUP sent to lockctl reach the command; lockctl
// exits with the command's status and releases the key.
func TestRunPassesSignalsOn(t *testing.T) {
	t.Parallel()
	d := newDB(t)
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP} {
		t.Run(sig.String(), func(t *testing.T) {
			dir := t.TempDir()
			name := sigName(sig)
			key := "sig-" + name
			p := d.start(append([]string{"run", key, "--"},
				script(dir, `trap 'echo `+name+` > $DIR/got; exit 5' `+name+`; touch $DIR/started; while :; do sleep 0.1; done`)...)...)
			p.waitForFile(filepath.Join(dir, "started"))
			if err := p.cmd.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			r := p.wait()
			if r.code != 5 {
				t.Fatalf("%s\nwant the command's exit 5", r)
			}
			if got := readFile(t, filepath.Join(dir, "got")); got != name+"\n" {
				t.Fatalf("the command's trap wrote %q; want %s", got, name)
			}
			if got := d.json(0, "acquire", key, "--owner", "next"); got.Outcome != "acquired" {
				t.Fatalf("acquire after the interrupted run = %+v; want acquired (released)", got)
			}
		})
	}
}

func sigName(s syscall.Signal) string {
	switch s {
	case syscall.SIGINT:
		return "INT"
	case syscall.SIGTERM:
		return "TERM"
	case syscall.SIGHUP:
		return "HUP"
	}
	return s.String()
}

// If lockctl itself is killed, the command does not run on without a
// kept lease: it gets SIGTERM.
func TestRunCommandStopsWhenLockctlDies(t *testing.T) {
	t.Parallel()
	d := newDB(t)
	dir := t.TempDir()
	p := d.start(append([]string{"run", "k", "--"},
		script(dir, `trap 'echo term > $DIR/term; exit 0' TERM; touch $DIR/started; while :; do sleep 0.1; done`)...)...)
	p.waitForFile(filepath.Join(dir, "started"))
	if err := p.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	p.wait()
	testdb.Eventually(t, 10*time.Second, "the command's SIGTERM after lockctl was killed", func() bool {
		_, err := os.Stat(filepath.Join(dir, "term"))
		return err == nil
	})
}
