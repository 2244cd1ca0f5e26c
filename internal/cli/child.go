package cli

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"time"

	"github.com/lockctl/lockctl/locker"
)

// startChild starts argv in a process group of its own, so that lockctl
// decides which signals reach it (each exactly once, rather than once from
// the terminal and once more from lockctl), and so that stopping it on a
// lost lease stops whatever it started too. With tty >= 0 (a terminal
// lockctl has in the foreground, see foregroundTerminal) that group is
// made the terminal's foreground group: the command reads the terminal,
// and the terminal's Ctrl-C reaches it directly (and lockctl not at all). If lockctl itself dies (SIGKILL,
// a crash), nothing renews the lease any more, so the command gets SIGTERM
// from the kernel rather than run on unguarded. (The kernel ties that signal
// to the thread that started the command; no goroutine here locks a thread,
// so the Go runtime never ends it.)
func startChild(env Env, argv []string, leases []locker.Lease, tty int) (*exec.Cmd, error) {
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = env.Stdin, env.Stdout, env.Stderr
	cmd.Env = childEnv(leases)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
	if tty >= 0 {
		// The child sets itself in the foreground before exec, with its
		// signals blocked, so the terminal does not stop it for asking.
		cmd.SysProcAttr.Foreground, cmd.SysProcAttr.Ctty = true, tty
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", argv[0], err)
	}
	return cmd, nil
}

// childEnd is how a supervised command ended.
type childEnd struct {
	code    int    // its exit status, 128+signal if a signal ended it
	lost    error  // the Keepalive's cause when the lease was lost, else nil
	stopped string // on a lost lease: how the command was stopped
}

// superviseChild waits for cmd to exit. Meanwhile it passes every signal
// from signals on to cmd's process group, and when leaseCtx ends (the
// lease is lost) it sends the group SIGTERM, then SIGKILL if the command
// is still running grace later; when an operator revokes the lease
// (onRevoke) it sends the group onRevoke's signal once. With tty >= 0 (the command has the
// terminal) a command that stops (Ctrl-Z) stops lockctl's job with it
// (suspendWithChild).
func superviseChild(cmd *exec.Cmd, signals <-chan os.Signal, leaseCtx context.Context, onRevoke revoked, grace time.Duration, tty int) childEnd {
	exited := make(chan struct{})
	go func() {
		if tty >= 0 {
			for childStopped(cmd.Process.Pid) {
				suspendWithChild(tty, cmd.Process.Pid)
			}
		}
		_ = cmd.Wait() // the status is read from cmd.ProcessState
		close(exited)
	}()
	group := -cmd.Process.Pid
	var end childEnd
	lost := leaseCtx.Done()
	var killAt <-chan time.Time
	for {
		select {
		case <-exited:
			end.code = exitStatus(cmd.ProcessState)
			if end.lost != nil && end.stopped == "" {
				end.stopped = fmt.Sprintf("the command exited (status %d) after SIGTERM", end.code)
			}
			return end
		case s := <-signals:
			if sig, ok := s.(syscall.Signal); ok {
				_ = syscall.Kill(group, sig)
			}
		case l := <-onRevoke.leases:
			onRevoke.leases = nil
			onRevoke.notice(l)
			if onRevoke.signal != 0 {
				_ = syscall.Kill(group, onRevoke.signal)
			}
		case <-lost:
			lost = nil
			end.lost = context.Cause(leaseCtx)
			_ = syscall.Kill(group, syscall.SIGTERM)
			timer := time.NewTimer(grace)
			defer timer.Stop()
			killAt = timer.C
		case <-killAt:
			killAt = nil
			_ = syscall.Kill(group, syscall.SIGKILL)
			end.stopped = fmt.Sprintf("the command was killed (SIGKILL): still running %s after SIGTERM", formatDuration(grace))
		}
	}
}

// exitStatus is the status a shell would report: the exit code, or
// 128+signal for a command a signal ended.
func exitStatus(ps *os.ProcessState) int {
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ps.ExitCode()
}
