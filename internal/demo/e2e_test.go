package demo_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/lockctl/lockctl/internal/testdb"
)

// End-to-end: the real binary in a real terminal (tmux), read from the
// screen the way a person would.

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
)

// lockctlBinary builds the command once per test binary.
func lockctlBinary(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("end-to-end: builds and runs the binary (-short)")
	}
	if _, err := exec.LookPath("tmux"); err != nil {
		testdb.Unavailable(t, "tmux not installed")
	}
	buildOnce.Do(func() {
		_, file, _, _ := runtime.Caller(0)
		root := filepath.Join(filepath.Dir(file), "..", "..")
		dir, err := os.MkdirTemp("", "lockctl-demo-e2e-bin-")
		if err != nil {
			buildErr = err
			return
		}
		binPath = filepath.Join(dir, "lockctl")
		cmd := exec.Command("go", "build", "-o", binPath, ".")
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binPath
}

// terminal is one tmux session, on a tmux server of its own, running one
// command in a 120×35 pane that stays readable after the command exits.
type terminal struct {
	t          *testing.T
	sock, name string
}

func openTerminal(t *testing.T, args ...string) *terminal {
	t.Helper()
	bin := lockctlBinary(t)
	term := &terminal{t: t, sock: fmt.Sprintf("lockctl-demo-e2e-%d-%d", os.Getpid(), time.Now().UnixNano()), name: "demo"}
	quoted := []string{bin}
	for _, a := range args {
		quoted = append(quoted, "'"+strings.ReplaceAll(a, "'", `'\''`)+"'")
	}
	// The shell prints the exit status after lockctl ends (tmux 3.3 has no
	// format for it); remain-on-exit keeps the pane to read it.
	command := strings.Join(quoted, " ") + `; echo "[exit $?]"`
	term.tmux("new-session", "-d", "-s", term.name, "-x", "120", "-y", "35", command,
		";", "set-option", "-t", term.name, "remain-on-exit", "on")
	t.Cleanup(func() { _ = exec.Command("tmux", "-L", term.sock, "kill-server").Run() })
	return term
}

func (term *terminal) tmux(args ...string) string {
	term.t.Helper()
	out, err := exec.Command("tmux", append([]string{"-L", term.sock}, args...)...).CombinedOutput()
	if err != nil {
		term.t.Fatalf("tmux %v: %v\n%s", args, err, out)
	}
	return string(out)
}

func (term *terminal) screen() string { return term.tmux("capture-pane", "-p", "-t", term.name) }

// transcript is the main screen with its scrollback: what is left on the
// terminal after lockctl exits.
func (term *terminal) transcript() string {
	return term.tmux("capture-pane", "-p", "-S", "-", "-E", "-", "-t", term.name)
}

func (term *terminal) format(f string) string {
	return strings.TrimSpace(term.tmux("display-message", "-p", "-t", term.name, f))
}

// pid is lockctl's process id: the one child of the pane's shell.
func (term *terminal) pid() int {
	term.t.Helper()
	shell := term.format("#{pane_pid}")
	b, err := os.ReadFile("/proc/" + shell + "/task/" + shell + "/children")
	if err != nil {
		term.t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		term.t.Fatalf("the pane's shell %s has children %q; want lockctl alone", shell, b)
	}
	return pid
}

// waitScreen polls the screen until cond accepts it.
func (term *terminal) waitScreen(within time.Duration, what string, cond func(string) bool) string {
	term.t.Helper()
	var s string
	if !testdb.Within(within, func() bool { s = term.screen(); return cond(s) }) {
		term.t.Fatalf("after %s the screen shows no %s:\n%s", within, what, s)
	}
	return s
}

// waitExit waits for lockctl to end and returns its exit status.
func (term *terminal) waitExit(within time.Duration) int {
	term.t.Helper()
	s := term.waitScreen(within, "exit status", exitRe.MatchString)
	code, _ := strconv.Atoi(exitRe.FindStringSubmatch(s)[1])
	return code
}

var exitRe = regexp.MustCompile(`\[exit (\d+)\]`)

var (
	stealsRe    = regexp.MustCompile(`steals (\d+)`)
	refusedRe   = regexp.MustCompile(`fenced writes (\d+) ok, (\d+) refused`)
	deadlocksRe = regexp.MustCompile(`deadlocks (\d+)`)
	// A table row of an account key held by the transfer.
	transferRowRe = regexp.MustCompile(`(?m)^. accounts:(alice|bob|carol) +transfer-1 `)
	// The backup key's row in state delayed, with the delay left.
	delayedRowRe = regexp.MustCompile(`(?m)^. backup:nightly +(last: )?backup-1\S* .*delayed`)
	// The pricing key's row held by its writer, the readers kept out.
	pricingWriterRowRe = regexp.MustCompile(`(?m)^. config:pricing +pricing-admin .* held`)
	// oneRowRe is the header of a table filtered to one row (not "row 1 of 16").
	oneRowRe = regexp.MustCompile(`row 1 of 1\b`)
)

// counter reads a number the status line shows; -1 when not on screen.
func counter(screen string, re *regexp.Regexp, group int) int {
	m := re.FindStringSubmatch(screen)
	if m == nil {
		return -1
	}
	n, _ := strconv.Atoi(m[group])
	return n
}

// serverOf finds the private server of the demo process pid: its
// directory and its postmaster's pid.
func serverOf(t *testing.T, pid int) (dir string, postmaster int) {
	t.Helper()
	var dirs []string
	for _, base := range []string{os.TempDir(), "/tmp"} {
		found, _ := filepath.Glob(filepath.Join(base, fmt.Sprintf("lockctl-pgtemp-%d-*", pid)))
		dirs = append(dirs, found...)
	}
	if len(dirs) == 0 {
		t.Fatalf("no lockctl-pgtemp-%d-* directory while the demo runs", pid)
	}
	b, err := os.ReadFile(filepath.Join(dirs[0], "data", "postmaster.pid"))
	if err != nil {
		t.Fatalf("the demo's server has no postmaster.pid: %v", err)
	}
	postmaster, _ = strconv.Atoi(strings.SplitN(string(b), "\n", 2)[0])
	return dirs[0], postmaster
}

// assertNothingLeft checks that the server of a demo that exited is gone:
// no directory, no postmaster, no process naming the directory.
func assertNothingLeft(t *testing.T, dir string, postmaster int) {
	t.Helper()
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("the demo's server directory %s is still there (%v)", dir, err)
	}
	if postmaster > 0 && syscall.Kill(postmaster, 0) == nil {
		if b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", postmaster)); strings.Contains(string(b), dir) {
			t.Errorf("the demo's postmaster (pid %d) is still running", postmaster)
		}
	}
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range procs {
		if b, _ := os.ReadFile(p); strings.Contains(string(b), dir) {
			t.Errorf("a process still runs in the demo's directory: %s: %q", p, b)
		}
	}
}

// consoleUp waits until the console draws the demo's locks.
func consoleUp(term *terminal) string {
	term.t.Helper()
	return term.waitScreen(60*time.Second, "console with the demo's locks", func(s string) bool {
		return strings.Contains(s, "orders:shard-") && strings.Contains(s, "scheduler:leader") &&
			strings.Contains(s, "reports:pool") && strings.Contains(s, "config:pricing") &&
			counter(s, stealsRe, 1) >= 0
	})
}

func TestDemoInTerminalQuitWithQ(t *testing.T) {
	t.Parallel()
	term := openTerminal(t, "demo", "--seed", "7")
	consoleUp(term)
	dir, postmaster := serverOf(t, term.pid())
	// At the default speed the first freeze, steal and refused write come
	// within seconds; 30 s is the promise.
	term.waitScreen(30*time.Second, "steal and refused fenced write in the status line", func(s string) bool {
		return counter(s, stealsRe, 1) >= 1 && counter(s, refusedRe, 2) >= 1
	})
	// The detail pane of ledger:balance (filtered to, then opened) lists the
	// refused write and the steal that preceded it.
	term.tmux("send-keys", "-t", term.name, "/")
	term.tmux("send-keys", "-t", term.name, "-l", "ledger:balance")
	term.tmux("send-keys", "-t", term.name, "Enter")
	term.waitScreen(5*time.Second, "the table filtered to ledger:balance", func(s string) bool {
		return strings.Contains(s, `filter "ledger:balance"`) && oneRowRe.MatchString(s)
	})
	term.tmux("send-keys", "-t", term.name, "Enter")
	term.waitScreen(10*time.Second, "ledger:balance history with a steal and a refused write", func(s string) bool {
		return strings.Contains(s, "Lock ledger:balance") && strings.Contains(s, "stale_write_rejected") &&
			strings.Contains(s, "stolen")
	})
	term.tmux("send-keys", "-t", term.name, "q")
	if code := term.waitExit(20 * time.Second); code != 0 {
		t.Errorf("lockctl demo exited %d after q, want 0:\n%s", code, term.screen())
	}
	assertNothingLeft(t, dir, postmaster)
}

// The scenes of several keys at once, lock-delay, deadlock detection and
// shared keys, read off the screen: the transfer holding two account keys
// at once, backup:nightly delayed after its holder crashed, then the
// standby holding it, a deadlock counted in the header, and the pricing
// writer holding config:pricing, which its readers otherwise share; on
// quitting, the deadlock's cycle is printed.
func TestDemoInTerminalTransferDelayDeadlock(t *testing.T) {
	t.Parallel()
	term := openTerminal(t, "demo", "--seed", "7", "--speed", "2")
	consoleUp(term)
	term.waitScreen(30*time.Second, "transfer-1 holding two account keys at once", func(s string) bool {
		return len(transferRowRe.FindAllString(s, -1)) == 2
	})
	term.waitScreen(30*time.Second, "backup:nightly delayed", delayedRowRe.MatchString)
	term.waitScreen(30*time.Second, "backup-2 holding backup:nightly after the delay", func(s string) bool {
		return regexp.MustCompile(`(?m)^. backup:nightly +backup-2 .* held`).MatchString(s)
	})
	term.waitScreen(30*time.Second, "a deadlock counted in the status line", func(s string) bool {
		return counter(s, deadlocksRe, 1) >= 1
	})
	term.waitScreen(30*time.Second, "pricing-admin holding config:pricing", pricingWriterRowRe.MatchString)
	term.tmux("send-keys", "-t", term.name, "q")
	if code := term.waitExit(20 * time.Second); code != 0 {
		t.Errorf("lockctl demo exited %d after q, want 0", code)
	}
	// The line wraps at the pane's width.
	after := strings.ReplaceAll(term.transcript(), "\n", "")
	if !strings.Contains(after, "Latest deadlock") || !strings.Contains(after, `"sync-eu" waits for "inventory:us"`) ||
		!strings.Contains(after, `"sync-us" waits for "inventory:eu"`) {
		t.Errorf("no deadlock cycle of the two syncers on the terminal after quitting:\n%s", after)
	}
}

func TestDemoInTerminalSIGTERM(t *testing.T) {
	t.Parallel()
	quitAndCheck(t, func(term *terminal, pid int) {
		if err := syscall.Kill(pid, syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
	})
}

func TestDemoInTerminalCtrlC(t *testing.T) {
	t.Parallel()
	quitAndCheck(t, func(term *terminal, _ int) { term.tmux("send-keys", "-t", term.name, "C-c") })
}

// quitAndCheck opens the demo, ends it with quit once the console is up,
// and checks it exits 0 leaving no server behind.
func quitAndCheck(t *testing.T, quit func(term *terminal, pid int)) {
	term := openTerminal(t, "demo", "--speed", "2")
	consoleUp(term)
	pid := term.pid()
	dir, postmaster := serverOf(t, pid)
	quit(term, pid)
	if code := term.waitExit(20 * time.Second); code != 0 {
		t.Errorf("lockctl demo exited %d, want 0:\n%s", code, term.transcript())
	}
	assertNothingLeft(t, dir, postmaster)
}

// heldInSchemaSQL counts live leases in the demo's schema of a database.
const heldInSchemaSQL = `SELECT count(*) FROM lockctl_demo.distributed_lock
	WHERE released_at IS NULL AND expires_at > clock_timestamp()`

func TestDemoOnExistingDatabase(t *testing.T) {
	t.Parallel()
	dsn := testdb.EmptyDSN(t)
	term := openTerminal(t, "demo", "--dsn", dsn, "--speed", "2")
	screen := consoleUp(term)
	if !strings.Contains(screen, "lockctl_demo") {
		t.Errorf("the console does not say it runs in schema lockctl_demo:\n%s", screen)
	}
	pool := testdb.Pool(t, dsn)
	if n := count(t, pool, heldInSchemaSQL); n == 0 {
		t.Errorf("no lease held in schema lockctl_demo while the demo runs")
	}
	term.tmux("send-keys", "-t", term.name, "q")
	if code := term.waitExit(20 * time.Second); code != 0 {
		t.Errorf("lockctl demo exited %d after q, want 0", code)
	}
	after := term.transcript()
	if !strings.Contains(after, "WARNING") || !strings.Contains(after, "schema lockctl_demo") {
		t.Errorf("no warning about the existing database on the terminal after quitting:\n%s", after)
	}
	if n := count(t, pool, heldInSchemaSQL); n != 0 {
		t.Errorf("%d leases still held in lockctl_demo after the demo quit", n)
	}
	_, _ = pool.Exec(context.Background(), "DROP SCHEMA lockctl_demo CASCADE")
}

// Bad flag values are usage errors (exit 2) that name the flag, before
// anything starts.
func TestDemoFlagErrors(t *testing.T) {
	bin := lockctlBinary(t)
	for _, args := range [][]string{
		{"--workers", "0"}, {"--keys", "-1"}, {"--speed", "0"}, {"--speed", "500"}, {"--workers", "1000"},
		{"--refresh", "0s"}, {"--seed", "x"},
	} {
		cmd := exec.Command(bin, append([]string{"demo"}, args...)...)
		out, err := cmd.CombinedOutput()
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.ExitCode() != 2 || !strings.Contains(string(out), args[0]+" ") ||
			strings.Count(string(out), "lockctl demo:") != 1 {
			t.Errorf("lockctl demo %v: %v\n%s\nwant exit 2 naming %s", args, err, out, args[0])
		}
	}
}

// Closing the terminal (tmux gone: SIGHUP) still stops the server and
// removes its directory.
func TestDemoInTerminalHangUp(t *testing.T) {
	t.Parallel()
	term := openTerminal(t, "demo", "--speed", "2")
	consoleUp(term)
	pid := term.pid()
	dir, postmaster := serverOf(t, pid)
	term.tmux("kill-server")
	if !testdb.Within(20*time.Second, func() bool { return syscall.Kill(pid, 0) != nil }) {
		t.Fatalf("lockctl demo (pid %d) still running 20s after its terminal closed", pid)
	}
	assertNothingLeft(t, dir, postmaster)
}
