package cli_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/lockctl/lockctl/internal/testdb"
	"github.com/lockctl/lockctl/locker"
)

// --lock-delay outside 0…60s is a usage error, before anything is taken.
func TestLockDelayFlagIsChecked(t *testing.T) {
	t.Parallel()
	d := newDB(t)
	for _, bad := range []string{"61s", "-1s"} {
		r := d.expect(2, "acquire", "k", "--owner", "a", "--lock-delay", bad)
		if !strings.Contains(r.stderr, "invalid --lock-delay") {
			t.Errorf("--lock-delay %s: %s", bad, r)
		}
		d.expect(2, "run", "k", "--owner", "a", "--lock-delay", bad, "--", "true")
	}
	if rows := lsJSON(t, d); len(rows) != 0 {
		t.Fatalf("a refused --lock-delay took %+v", rows)
	}
}

// A lease taken with --lock-delay that runs out keeps its key from
// everyone: acquire is refused with exit 3, saying until when (text and
// JSON), ls shows the key delayed, and end-delay (operator) lets the next
// acquirer have it.
func TestLockDelayFromTheCommandLine(t *testing.T) {
	t.Parallel()
	d := newDB(t)
	first := d.json(0, "acquire", "k", "--owner", "a", "--lock-delay", "30s")
	d.json(0, "acquire", "other", "--owner", "a", "--lock-delay", "30s")
	d.expireLease("k")

	got := d.json(3, "acquire", "k", "--owner", "b")
	if got.Error != "delayed" || got.Outcome != "delayed" || got.DelayUntil == nil || len(got.Holders) != 0 ||
		got.QueueLength == nil || *got.QueueLength != 0 || got.Position != nil || got.Owner != "a" || got.Token != first.Token {
		t.Fatalf("acquire in the lock-delay = %+v; want error delayed with delay_until, no holder, an empty queue", got)
	}
	if left := time.Until(*got.DelayUntil); left < 20*time.Second || left > 31*time.Second {
		t.Errorf("delay_until %v is %v away; want about 30s", *got.DelayUntil, left)
	}
	r := d.expect(3, "acquire", "k", "--owner", "b")
	if !strings.Contains(r.stderr, "k is in its lock-delay until ") || !strings.Contains(r.stderr, "last held by a") {
		t.Errorf("text refusal: %s", r)
	}

	if keys := lsKeys(t, d, "--state", "delayed"); keys != "k" {
		t.Errorf("ls --state delayed lists %q; want k", keys)
	}
	for _, row := range lsJSON(t, d) {
		if (row.Key == "k") != (row.DelayUntil != nil) || row.Key == "k" && row.State != "delayed" {
			t.Errorf("ls --json row %+v; want delay_until and state delayed on k only", row)
		}
	}
	if r := d.expect(0, "ls"); !strings.Contains(r.stdout, "delayed") || !strings.Contains(r.stdout, "delay ") {
		t.Errorf("ls shows no delay:\n%s", r.stdout)
	}

	ended := d.expect(0, "end-delay", "k", "--reason", "a is gone", "--actor", "alice@ops")
	if !strings.Contains(ended.stdout, "ended the lock-delay of k") {
		t.Errorf("end-delay printed %s", ended)
	}
	d.expect(4, "end-delay", "k")
	d.expect(4, "end-delay", "other")
	if got := d.json(0, "acquire", "k", "--owner", "b"); got.Outcome != "stolen" {
		t.Fatalf("acquire after end-delay = %+v; want stolen", got)
	}
	r = d.expect(0, "events", "k", "--json")
	if !strings.Contains(r.stdout, `"delay_ended"`) || !strings.Contains(r.stdout, "alice@ops") || !strings.Contains(r.stdout, "a is gone") {
		t.Errorf("events of k do not show the ended delay by alice@ops with its reason:\n%s", r.stdout)
	}
}

// A held refusal names the holder and how many wait; a wait that runs out
// also says where the caller stood.
func TestRefusalSaysTheQueue(t *testing.T) {
	t.Parallel()
	d := newDB(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	holder := d.json(0, "acquire", "k", "--owner", "a", "--ttl", "1m")
	pool := testdb.Pool(t, d.dsn)
	lk := testdb.Locker(t, locker.Config{TTL: time.Minute, WaitRecheck: 30 * time.Second})
	testdb.AcquireAsync(ctx, lk, pool, "k", "w1")
	testdb.WaitForWaiter(t, pool, "k", "w1")

	got := d.json(3, "acquire", "k", "--owner", "b")
	if got.Error != "held" || len(got.Holders) != 1 || got.Holders[0].Owner != "a" || got.Holders[0].Token != holder.Token ||
		got.Holders[0].RemainingMs <= 0 || got.QueueLength == nil || *got.QueueLength != 1 || got.Position != nil {
		t.Fatalf("held refusal = %+v; want held by a, 1 queued", got)
	}
	if r := d.expect(3, "acquire", "k", "--owner", "b"); !strings.Contains(r.stderr, "held by a") || !strings.Contains(r.stderr, "; 1 queued") {
		t.Errorf("text refusal: %s", r)
	}
	got = d.json(3, "acquire", "k", "--owner", "b", "--wait", "300ms")
	if got.Error != "held" || got.Position == nil || *got.Position != 2 || *got.QueueLength != 2 {
		t.Fatalf("wait that ran out = %+v; want held, queued 2 of 2", got)
	}
}

// A force action on a lease with a lock-delay says that it started one, and
// until when; on a lease without one it says nothing of a delay.
func TestForceActionsSayTheLockDelayTheyStart(t *testing.T) {
	t.Parallel()
	d := newDB(t)
	d.json(0, "acquire", "slow", "--owner", "a", "--lock-delay", "20s")
	d.json(0, "acquire", "plain", "--owner", "a")
	freed := d.json(0, "force-release", "slow", "--actor", "alice@ops")
	if freed.DelayUntil == nil || time.Until(*freed.DelayUntil) < 10*time.Second || time.Until(*freed.DelayUntil) > 21*time.Second {
		t.Fatalf("force-release of a lease with a 20s lock-delay = %+v; want delay_until about 20s away", freed)
	}
	if plain := d.json(0, "force-release", "plain"); plain.DelayUntil != nil {
		t.Fatalf("force-release of a lease without a lock-delay = %+v; want no delay_until", plain)
	}
	d.json(0, "acquire", "slow2", "--owner", "a", "--lock-delay", "20s")
	if r := d.expect(0, "expire", "slow2"); !strings.Contains(r.stdout, "in its lock-delay until ") {
		t.Fatalf("expire of a lease with a lock-delay printed %s", r)
	}
}
