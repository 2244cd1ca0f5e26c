package pgtemp

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// Freeze stops every process of the server with SIGSTOP, as a hung host
// would: connections stay open, new ones are accepted by the kernel, and
// nothing answers. Thaw resumes it. Tests use it to check what a client
// does while the server is frozen. Linux only (it reads /proc).
func (in *Instance) Freeze() error { return in.signalAll(syscall.SIGSTOP) }

// Thaw resumes a frozen server.
func (in *Instance) Thaw() error { return in.signalAll(syscall.SIGCONT) }

// signalAll signals the postmaster and its children. A process group would
// not do: every backend calls setsid() when it starts.
func (in *Instance) signalAll(sig syscall.Signal) error {
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.cmd == nil || in.cmd.Process == nil {
		return errors.New("pgtemp: not running")
	}
	pm := in.cmd.Process.Pid
	// Stopped first, the postmaster forks no child meanwhile; resumed last,
	// it finds its children running.
	pids := append([]int{pm}, childrenOf(pm)...)
	if sig == syscall.SIGCONT {
		pids = append(childrenOf(pm), pm)
	}
	for _, pid := range pids {
		if err := syscall.Kill(pid, sig); err != nil && !errors.Is(err, syscall.ESRCH) {
			return fmt.Errorf("pgtemp: signal %v to %d: %w", sig, pid, err)
		}
	}
	return nil
}

// childrenOf lists the processes whose parent is pid.
func childrenOf(pid int) []int {
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	var out []int
	for _, f := range stats {
		b, err := os.ReadFile(f)
		if err != nil {
			continue // the process ended meanwhile
		}
		// "pid (comm) state ppid …"; comm may hold spaces and parentheses.
		rest := string(b[strings.LastIndexByte(string(b), ')')+1:])
		fields := strings.Fields(rest)
		if len(fields) < 2 {
			continue
		}
		if ppid, _ := strconv.Atoi(fields[1]); ppid == pid {
			child, _ := strconv.Atoi(filepath.Base(filepath.Dir(f)))
			out = append(out, child)
		}
	}
	return out
}
