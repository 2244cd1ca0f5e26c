package cli_test

import (
	"context"
	"strings"
	"testing"

	"github.com/lockctl/lockctl/internal/lockdb"
	"github.com/lockctl/lockctl/internal/testdb"
	"github.com/lockctl/lockctl/store"
)

func TestExpireFencedByToken(t *testing.T) {
	t.Parallel()
	d := newDB(t)
	ctx := context.Background()
	pool := testdb.Pool(t, d.dsn)

	old := d.json(0, "acquire", "k", "--owner", "a", "--ttl", "1m")
	d.expireLease("k")
	current := d.json(0, "acquire", "k", "--owner", "b", "--ttl", "1m")
	before, _, err := store.Get[lockdb.LockInfo](ctx, pool, "k")
	if err != nil {
		t.Fatal(err)
	}

	stale := d.json(4, "expire", "k", "--token", tokenArg(old.Token))
	if stale.Outcome != "not_held" || stale.Owner != "b" || stale.Token != current.Token {
		t.Fatalf("expire with a stale token = %+v; want not_held naming b", stale)
	}
	after, _, err := store.Get[lockdb.LockInfo](ctx, pool, "k")
	if err != nil {
		t.Fatal(err)
	}
	if after.Owner != "b" || after.Token != current.Token || !after.ExpiresAt.Equal(before.ExpiresAt) || after.State() != lockdb.StateHeld {
		t.Fatalf("row after a stale expire = %+v; want unchanged %+v", after, before)
	}

	// Without --token: the current token, read first.
	expired := d.json(0, "expire", "k", "--actor", "ops@test")
	if expired.Outcome != "expired" || expired.Token != current.Token || expired.Owner != "b" ||
		expired.State != "expired" || expired.Actor != "ops@test" {
		t.Fatalf("expire = %+v; want expired, token %d of b, by ops@test", expired, current.Token)
	}
	row, _, err := store.Get[lockdb.LockInfo](ctx, pool, "k")
	if err != nil {
		t.Fatal(err)
	}
	if row.State() != lockdb.StateExpired {
		t.Fatalf("row after expire is %s; want expired", row.State())
	}
	last := lastEvent(t, pool, "k")
	if last.Kind != lockdb.EventForceExpired || last.Actor != "ops@test" || last.Token == nil || *last.Token != current.Token {
		t.Fatalf("last event = %+v; want force_expired by ops@test token %d", last, current.Token)
	}

	// The next acquirer takes it over with a larger token.
	next := d.json(0, "acquire", "k", "--owner", "c")
	if next.Outcome != "stolen" || next.Token <= current.Token {
		t.Fatalf("acquire after expire = %+v; want stolen with a larger token", next)
	}
}

func TestExpireNothingToExpire(t *testing.T) {
	t.Parallel()
	d := newDB(t)
	none := d.json(4, "expire", "missing")
	if none.Outcome != "not_held" || none.State != "none" || none.ExpiresAt != nil {
		t.Fatalf("expire of a key without a row = %+v; want not_held, state none", none)
	}
	lease := d.json(0, "acquire", "k", "--owner", "a")
	d.json(0, "release", "k", "--owner", "a", "--token", tokenArg(lease.Token))
	free := d.json(4, "expire", "k")
	if free.State != "free" || !strings.Contains(free.Detail, "released") {
		t.Fatalf("expire of a free key = %+v; want not_held, free", free)
	}

	held := d.json(0, "acquire", "k3", "--owner", "a")
	r := d.expect(0, "expire", "k3", "--token", tokenArg(held.Token), "--actor", "ops@test")
	if r.stdout != "expired k3 token="+tokenArg(held.Token)+" owner=a (by ops@test; the next acquirer takes it over)\n" {
		t.Fatalf("text expire printed %q", r.stdout)
	}
}
