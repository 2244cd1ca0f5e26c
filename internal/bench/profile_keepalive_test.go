package bench

// Where a keepalive's client CPU goes: run with
// LOCKCTL_BENCH_PROFILE=1 go test -run TestKeepaliveProfile -v ./internal/bench/
// It keeps 1000 locks alive at TTL 30s for 30s, as `lockctl bench` does,
// under a CPU profile written to $TMPDIR/keepalive.pprof; read it with
// go tool pprof -top.

import (
	"context"
	"os"
	"path/filepath"
	"runtime/pprof"
	"testing"
	"time"

	"github.com/lockctl/lockctl/internal/testdb"
)

func TestKeepaliveProfile(t *testing.T) {
	profiling(t, "profile keepalives")
	ctx := context.Background()
	tg, err := openTarget(ctx, testdb.DSN(t), 8)
	if err != nil {
		t.Fatal(err)
	}
	defer tg.close(ctx)
	f, err := os.Create(filepath.Join(os.TempDir(), "keepalive.pprof"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := pprof.StartCPUProfile(f); err != nil {
		t.Fatal(err)
	}
	res, err := measureKeepalive(ctx, tg.pool, 1000, 30*time.Second, 30*time.Second)
	pprof.StopCPUProfile()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%+v; %.0f µs of client CPU per renewal", res, float64(res.CPU.Microseconds())/float64(max(res.Renewals, 1)))
}
