package bench

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
)

// CPU time per cycle is the measure that survives a busy machine: when the
// two cores are shared, throughput follows whatever else runs, but the CPU a
// cycle costs the server and the client barely moves. It is read from
// /proc, so it is only known when the server runs on this machine (the
// throwaway server always does); otherwise it is reported as zero.

// processCPU is this process's user plus system CPU time so far.
func processCPU() (time.Duration, error) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, fmt.Errorf("bench: getrusage: %w", err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), nil
}

// serverPIDsSQL lists every server process, background ones included
// (WAL writer, checkpointer, …): commit cost lands partly on them.
const serverPIDsSQL = `SELECT pid FROM pg_stat_activity`

// clockTicks is USER_HZ, the unit of /proc/PID/stat's CPU times; 100 on
// every Linux architecture Go supports.
const clockTicks = 100

// serverCPU snapshots the CPU time of every server process by pid. nil when
// the server's processes are not visible here.
func serverCPU(ctx context.Context, conn *pgx.Conn) map[int32]time.Duration {
	rows, err := conn.Query(ctx, serverPIDsSQL)
	if err != nil {
		return nil
	}
	pids, err := pgx.CollectRows(rows, pgx.RowTo[int32])
	if err != nil {
		return nil
	}
	out := make(map[int32]time.Duration, len(pids))
	for _, pid := range pids {
		if cpu, ok := procCPU(pid); ok {
			out[pid] = cpu
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// procCPU reads utime+stime of a postgres process from /proc.
func procCPU(pid int32) (time.Duration, bool) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, false
	}
	s := string(b)
	open, end := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
	if open < 0 || end < open || !strings.HasPrefix(s[open+1:end], "postgres") {
		return 0, false // another process that happens to have this pid here
	}
	f := strings.Fields(s[end+1:])
	if len(f) < 13 {
		return 0, false
	}
	utime, err1 := strconv.ParseInt(f[11], 10, 64)
	stime, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, false
	}
	return time.Duration(utime+stime) * time.Second / clockTicks, true
}

// cpuSince sums the CPU used since before by the processes in both
// snapshots (a process that started meanwhile, say an autovacuum worker,
// counts from its start).
func cpuSince(before, after map[int32]time.Duration) time.Duration {
	var d time.Duration
	for pid, a := range after {
		d += a - before[pid]
	}
	return d
}
