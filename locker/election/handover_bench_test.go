package election_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/lockctl/lockctl/internal/lockdb"
	"github.com/lockctl/lockctl/internal/testdb"
	"github.com/lockctl/lockctl/locker"
	"github.com/lockctl/lockctl/locker/election"
)

// Candidates in processes of their own (this test binary, run again with
// candidateEnv set): each campaigns, leads for hold, resigns and campaigns
// again, printing "won TERM NS" and "resign TERM NS" (wall clock, one
// machine). With candidateEnv "lock" it takes and releases the key with
// locker alone: the plain queue's hand-off, side by side.
const candidateEnv = "ELECTION_BENCH_CANDIDATE"

func init() {
	if mode := os.Getenv(candidateEnv); mode != "" {
		os.Exit(runCandidate(mode, os.Getenv("ELECTION_BENCH_DSN")))
	}
}

const hold = 20 * time.Millisecond

func runCandidate(mode, dsn string) int {
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, dsn)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	n := locker.NewNotifier(locker.NotifierConfig{Connect: lockdb.ConnectWith(pool.Config().ConnConfig)})
	go func() { _ = n.Run(ctx) }()
	if !testdb.Within(10*time.Second, n.Live) {
		fmt.Fprintln(os.Stderr, "the notifier is not listening")
		return 1
	}
	lc := locker.Config{TTL: 2 * time.Second, Notifier: n}
	out := bufio.NewWriter(os.Stdout)
	say := func(what string, term int64) {
		fmt.Fprintf(out, "%s %d %d\n", what, term, time.Now().UnixNano())
		_ = out.Flush()
	}
	owner := locker.NewOwnerID()
	if mode == "lock" {
		lk, err := locker.New(lc)
		if err != nil {
			return 1
		}
		for {
			leases, err := lk.Acquire(ctx, pool, locker.Request{Keys: locker.Keys("leader"), Owner: owner, Wait: locker.WaitForever})
			if err != nil {
				fmt.Fprintln(os.Stderr, err)
				return 1
			}
			say("won", leases[0].Token)
			testdb.Pace(hold) // the leader's work
			say("resign", leases[0].Token)
			_, _ = lk.Release(ctx, pool, leases...)
		}
	}
	e, err := election.New(pool, "leader", election.Config{Locker: lc, Owner: owner})
	if err != nil {
		return 1
	}
	for {
		term, err := e.Campaign(ctx, owner)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		say("won", term)
		testdb.Pace(hold) // the leader's work
		say("resign", term)
		_ = e.Resign(ctx)
	}
}

type mark struct {
	what string
	term int64
	at   time.Time
	proc int
}

// candidates starts n candidate processes in mode and sends their marks.
func candidates(b *testing.B, mode, dsn string, n int) ([]*exec.Cmd, <-chan mark) {
	marks := make(chan mark, 1024)
	var cmds []*exec.Cmd
	for i := range n {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), candidateEnv+"="+mode, "ELECTION_BENCH_DSN="+dsn)
		cmd.Stderr = os.Stderr
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			b.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			b.Fatal(err)
		}
		cmds = append(cmds, cmd)
		b.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
		go func() {
			sc := bufio.NewScanner(stdout)
			for sc.Scan() {
				f := strings.Fields(sc.Text())
				term, _ := strconv.ParseInt(f[1], 10, 64)
				ns, _ := strconv.ParseInt(f[2], 10, 64)
				marks <- mark{f[0], term, time.Unix(0, ns), i}
			}
		}()
	}
	return cmds, marks
}

// BenchmarkResignHandOver: 3 candidates in 3 processes; the time from a
// leader's Resign to the next leader's Campaign returning, p50 and p99, for
// the election and for the plain queue's Release → Acquire.
func BenchmarkResignHandOver(b *testing.B) {
	for _, mode := range []string{"election", "lock"} {
		b.Run(mode, func(b *testing.B) {
			dsn := testdb.DSN(b)
			_, marks := candidates(b, mode, dsn, 3)
			var lat []time.Duration
			var resignAt time.Time
			var last int64
			for len(lat) < max(b.N, 200) {
				m := <-marks
				switch {
				case m.what == "resign":
					resignAt = m.at
				case m.what == "won" && !resignAt.IsZero():
					if m.term <= last {
						b.Fatalf("term %d after %d", m.term, last)
					}
					lat = append(lat, m.at.Sub(resignAt))
				}
				if m.what == "won" {
					last = m.term
				}
			}
			report(b, lat)
		})
	}
}

// BenchmarkLeaderDeath: the leader's process is killed; the time until the
// next leader's Campaign returns, against its TTL (2 s).
func BenchmarkLeaderDeath(b *testing.B) {
	dsn := testdb.DSN(b)
	cmds, marks := candidates(b, "election", dsn, 3)
	var lat []time.Duration
	for i := 0; i < max(b.N, 3) && i < len(cmds)-1; i++ {
		m := <-marks
		for m.what != "won" {
			m = <-marks
		}
		killed := time.Now()
		_ = cmds[m.proc].Process.Signal(syscall.SIGKILL)
		for {
			n := <-marks
			if n.what == "won" && n.proc != m.proc {
				if n.term <= m.term {
					b.Fatalf("term %d after %d", n.term, m.term)
				}
				lat = append(lat, n.at.Sub(killed))
				break
			}
		}
	}
	report(b, lat)
}

func report(b *testing.B, lat []time.Duration) {
	slices.Sort(lat)
	q := func(p float64) time.Duration { return lat[int(p*float64(len(lat)-1))] }
	b.ReportMetric(float64(q(0.5).Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(q(0.99).Microseconds())/1000, "p99-ms")
	b.ReportMetric(float64(lat[len(lat)-1].Microseconds())/1000, "max-ms")
	b.ReportMetric(float64(len(lat)), "samples")
}
