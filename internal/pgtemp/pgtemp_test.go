package pgtemp

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// The tests below re-run this test binary as a child that starts a server
// and then waits to be killed; helperEnv selects that mode.
const helperEnv = "PGTEMP_TEST_CHILD"

func TestMain(m *testing.M) {
	if os.Getenv(helperEnv) != "" {
		runChild()
		return
	}
	os.Exit(m.Run())
}

// runChild starts a server, prints "<dir> <postmaster pid>" and waits. With
// helperEnv=bouncer it also starts a PgBouncer and prints its pid third.
func runChild() {
	ctx := context.Background()
	in, err := Start(ctx, Options{Fast: true, HandleSignals: true})
	if err != nil {
		fmt.Println("error", err)
		os.Exit(1)
	}
	pids := strconv.Itoa(in.cmd.Process.Pid)
	if os.Getenv(helperEnv) == "bouncer" {
		b, err := StartBouncer(ctx, in, BouncerOptions{})
		if err != nil {
			fmt.Println("error", err)
			os.Exit(1)
		}
		pids += " " + strconv.Itoa(b.cmd.Process.Pid)
	}
	fmt.Println(in.Dir(), pids)
	// Until it is killed, or its test is gone (its end of stdin closed),
	// so that a test that never kills it leaves nothing running.
	_, _ = io.Copy(io.Discard, os.Stdin)
	os.Exit(3)
}

// unavailable skips a test that lacks a program it needs, except under
// CI=true, where it fails: CI must never pass by not running a test.
func unavailable(t *testing.T, err error) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatalf("CI=true, so this fails rather than skips: %v", err)
	}
	t.Skip(err)
}

func requireServer(t *testing.T) {
	t.Helper()
	if _, err := FindBinDir(); err != nil {
		unavailable(t, err)
	}
}

// startServer starts a throwaway server closed when the test ends.
func startServer(t *testing.T) *Instance {
	t.Helper()
	requireServer(t)
	in, err := Start(context.Background(), Options{Fast: true, HandleSignals: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = in.Close() })
	return in
}

func TestStartServesAndCloseRemovesEverything(t *testing.T) {
	requireServer(t)
	ctx := context.Background()
	in, err := Start(ctx, Options{Fast: true})
	if err != nil {
		t.Fatal(err)
	}
	pid := in.cmd.Process.Pid
	conn, err := pgx.Connect(ctx, in.DSN(""))
	if err != nil {
		t.Fatal(err)
	}
	var one int
	if err := conn.QueryRow(ctx, "SELECT 1").Scan(&one); err != nil || one != 1 {
		t.Fatalf("SELECT 1 = %d, %v", one, err)
	}
	conn.Close(ctx)

	if err := in.Restart(ctx, Immediate); err != nil {
		t.Fatalf("restart after a crash stop: %v", err)
	}
	if _, err := pgx.Connect(ctx, in.DSN("")); err != nil {
		t.Fatalf("same DSN after restart: %v", err)
	}

	if err := in.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(in.Dir()); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("directory %s still there after Close (stat: %v)", in.Dir(), err)
	}
	if processAlive(pid) {
		t.Fatalf("first postmaster %d still running after Close", pid)
	}
	if _, err := pgx.Connect(ctx, in.DSN("")); err == nil {
		t.Fatal("server still accepts connections after Close")
	}
	if err := in.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
}

// startChild runs runChild in a new process (mode is helperEnv's value) and
// returns it with the server's directory and the pids the child printed.
func startChild(t *testing.T, mode string) (*exec.Cmd, string, []int) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), helperEnv+"="+mode)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	in, err := cmd.StdinPipe() // open while the test runs
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = in.Close(); _ = cmd.Process.Kill(); _ = cmd.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("child printed nothing: %v", err)
	}
	fields := strings.Fields(line)
	if len(fields) < 2 || fields[0] == "error" {
		t.Fatalf("child: %s", line)
	}
	var pids []int
	for _, f := range fields[1:] {
		pid, err := strconv.Atoi(f)
		if err != nil {
			t.Fatalf("child: %s", line)
		}
		pids = append(pids, pid)
	}
	return cmd, fields[0], pids
}

// waitGone checks gone until it holds. What it waits for (a process's
// exit, a directory's removal) announces itself nowhere a test can wait
// on, and testdb's waits are out of reach (testdb imports this package):
// this is the package's one poll.
func waitGone(t *testing.T, what string, gone func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !gone() {
		if time.Now().After(deadline) {
			t.Fatalf("%s still there 20s after the owner was stopped", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func TestSignalClosesServers(t *testing.T) {
	requireServer(t)
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
		t.Run(sig.String(), func(t *testing.T) {
			cmd, dir, pids := startChild(t, "server")
			pid := pids[0]
			_ = cmd.Process.Signal(sig)
			_ = cmd.Wait()
			waitGone(t, "postmaster", func() bool { return !processAlive(pid) })
			waitGone(t, "directory "+dir, func() bool { _, err := os.Stat(dir); return errors.Is(err, os.ErrNotExist) })
		})
	}
}

func TestKilledOwnerLeavesNothingRunning(t *testing.T) {
	requireServer(t)
	cmd, dir, pids := startChild(t, "server")
	pid := pids[0]
	_ = cmd.Process.Kill() // SIGKILL: no handler runs
	_ = cmd.Wait()
	// The kernel's parent-death signal stops the server...
	waitGone(t, "postmaster", func() bool { return !processAlive(pid) })
	// ...and the next Start sweeps the directory the killed run left.
	removeStale(filepath.Dir(dir))
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("stale directory %s survived the sweep", dir)
	}
}

func TestMissingBinariesSayWhatToInstall(t *testing.T) {
	t.Setenv("PG_BINDIR", "")
	t.Setenv("PATH", t.TempDir())
	old := debianBinGlob
	debianBinGlob = filepath.Join(t.TempDir(), "*", "bin")
	t.Cleanup(func() { debianBinGlob = old })

	_, err := Start(context.Background(), Options{})
	if !errors.Is(err, ErrNoServer) {
		t.Fatalf("Start without binaries = %v, want ErrNoServer", err)
	}
	if !strings.Contains(err.Error(), "apt-get install postgresql") {
		t.Fatalf("message %q does not say what to install", err)
	}

	t.Setenv("PG_BINDIR", t.TempDir())
	if _, err := FindBinDir(); err == nil || !strings.Contains(err.Error(), "PG_BINDIR") {
		t.Fatalf("an empty PG_BINDIR = %v, want an error naming PG_BINDIR", err)
	}
}
