package cli_test

import (
	"context"
	"strings"
	"testing"

	"github.com/lockctl/lockctl/internal/lockdb"
	"github.com/lockctl/lockctl/internal/testdb"
	"github.com/lockctl/lockctl/store"
)

// force-release frees only the token given (exit 4 for a stale one,
// nothing changed), records the event under --actor rather than the
// holder, and the next acquirer gets a larger token.
func TestForceReleaseFencedByToken(t *testing.T) {
	t.Parallel()
	d := newDB(t)
	ctx := context.Background()
	pool := testdb.Pool(t, d.dsn)

	lease := d.json(0, "acquire", "k", "--owner", "worker-1", "--ttl", "1m")
	stale := d.json(4, "force-release", "k", "--token", tokenArg(lease.Token+1000))
	if stale.Outcome != "not_held" || stale.Owner != "worker-1" || stale.Token != lease.Token {
		t.Fatalf("force-release with a wrong token = %+v; want not_held naming worker-1", stale)
	}
	if row, _, err := store.Get[lockdb.LockInfo](ctx, pool, "k"); err != nil || row.State() != lockdb.StateHeld || row.Token != lease.Token {
		t.Fatalf("row after a refused force-release = %+v, %v; want held, token %d", row, err, lease.Token)
	}

	freed := d.json(0, "force-release", "k", "--token", tokenArg(lease.Token), "--actor", "alice@ops")
	if freed.Outcome != "force_released" || freed.Owner != "worker-1" || freed.Token != lease.Token || freed.Actor != "alice@ops" {
		t.Fatalf("force-release = %+v; want force_released of worker-1's token %d by alice@ops", freed, lease.Token)
	}
	row, _, err := store.Get[lockdb.LockInfo](ctx, pool, "k")
	if err != nil || row.State() != lockdb.StateFree {
		t.Fatalf("row after force-release = %+v, %v; want free", row, err)
	}
	last := lastEvent(t, pool, "k")
	if last.Kind != lockdb.EventForceReleased || last.Actor != "alice@ops" || last.Owner == nil || *last.Owner != "worker-1" ||
		last.Token == nil || *last.Token != lease.Token {
		t.Fatalf("last event = %+v; want force_released by alice@ops of worker-1 token %d", last, lease.Token)
	}

	// Already free: nothing to release, exit 4; the holder's own release is
	// refused too.
	d.json(4, "force-release", "k", "--token", tokenArg(lease.Token))
	d.expect(4, "release", "k", "--owner", "worker-1", "--token", tokenArg(lease.Token))
	next := d.json(0, "acquire", "k", "--owner", "worker-2")
	if next.Outcome != "acquired" || next.Token <= lease.Token {
		t.Fatalf("acquire after force-release = %+v; want acquired with a token above %d", next, lease.Token)
	}

	// Without --token: the current one, read first; text output names the actor.
	r := d.expect(0, "force-release", "k", "--actor", "bob@ops")
	if !strings.Contains(r.stdout, "force-released k token="+tokenArg(next.Token)) || !strings.Contains(r.stdout, "by bob@ops") {
		t.Fatalf("force-release text output: %s", r)
	}
	d.expect(4, "force-release", "missing")
	d.expect(2, "force-release", "k", "--token", "-1")
}
