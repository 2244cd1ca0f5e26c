package cli_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/lockctl/lockctl/internal/testdb"
)

// A writer's lease becomes a reader's and back, each with a new token; the
// old token is gone; an upgrade refused says so, one that waits gets the
// key when the other reader releases, and a second reader's upgrade beside
// it is a deadlock.
func TestDowngradeAndUpgrade(t *testing.T) {
	t.Parallel()
	d := newDB(t)
	written := d.json(0, "acquire", "catalog", "--owner", "indexer")
	read := d.json(0, "downgrade", "catalog", "--owner", "indexer", "--token", tokenArg(written.Token))
	if read.Outcome != "acquired" || read.Owner != "indexer" || read.Token <= written.Token || read.Mode != "shared" {
		t.Fatalf("downgrade = %+v; want indexer's shared lease above token %d", read, written.Token)
	}
	d.expect(4, "renew", "catalog", "--owner", "indexer", "--token", tokenArg(written.Token))
	d.expect(4, "downgrade", "catalog", "--owner", "indexer", "--token", tokenArg(written.Token))
	other := d.json(0, "acquire", "catalog", "--shared", "--owner", "reporter")

	held := d.expect(3, "upgrade", "catalog", "--owner", "indexer", "--token", tokenArg(read.Token))
	if !strings.Contains(held.stderr, "catalog is held shared by 2 holders") {
		t.Errorf("a refused upgrade: %s; want it to name the key's holders", held)
	}
	upgraded := make(chan result, 1)
	go func() {
		upgraded <- d.run("upgrade", "catalog", "--owner", "indexer", "--token", tokenArg(read.Token), "--wait", "30s")
	}()
	if !testdb.Within(10*time.Second, func() bool {
		var n int
		d.onConn(func(conn *pgx.Conn) {
			_ = conn.QueryRow(context.Background(), `SELECT count(*) FROM distributed_lock_waiter`).Scan(&n)
		})
		return n == 1
	}) {
		t.Fatal("the upgrade never queued")
	}
	dead := d.expect(5, "upgrade", "catalog", "--owner", "reporter", "--token", tokenArg(other.Token), "--wait", "10s")
	if !strings.Contains(dead.stderr, "indexer") {
		t.Errorf("the second upgrade: %s; want the cycle through indexer", dead)
	}
	d.expect(0, "release", "catalog", "--owner", "reporter", "--token", tokenArg(other.Token))
	text := <-upgraded
	if text.code != 0 || !strings.HasPrefix(text.stdout, "acquired catalog token=") || strings.Contains(text.stdout, "shared") {
		t.Errorf("the waiting upgrade: %s; want an exclusive grant", text)
	}
	d.expect(4, "upgrade", "catalog", "--owner", "indexer", "--token", tokenArg(read.Token))
}
