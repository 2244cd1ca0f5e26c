package bench

// The same comparison on a server without fsync (pgtemp's Fast: commits do
// not wait for the disk), to show how much of the result is the disk's.
// Gated like TestVariants:
// LOCKCTL_BENCH_PROFILE=1 go test -run TestFastServer -v ./internal/bench/

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/lockctl/lockctl/internal/pgtemp"
	"github.com/lockctl/lockctl/internal/testdb"
)

func TestFastServer(t *testing.T) {
	profiling(t, "compare on a server without fsync")
	ctx := context.Background()
	srv, err := pgtemp.Start(ctx, pgtemp.Options{Fast: true, HandleSignals: true})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	rep, err := Run(ctx, srv.DSN(""), testdb.SchemaSQL(t), Options{
		Workers: []int{1, 8}, Duration: 2 * time.Second, Rounds: 3, KeepaliveLocks: -1})
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	if err := rep.WriteMarkdown(&b); err != nil {
		t.Fatal(err)
	}
	t.Log("\n" + b.String())
}
