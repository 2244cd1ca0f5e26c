package cli_test

import (
	"context"
	"encoding/json"
	"maps"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/lockctl/lockctl/internal/testdb"
)

// waitInBackground starts `lockctl acquire KEY --owner OWNER --wait 10m`
// and returns once its waiter record is live; the process is killed at
// the end of the test.
func (d db) waitInBackground(key, owner string) {
	d.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, binary, d.withDSN([]string{"acquire", key, "--owner", owner, "--wait", "10m"})...)
	cmd.Env = cleanEnv()
	if err := cmd.Start(); err != nil {
		d.t.Fatal(err)
	}
	d.t.Cleanup(func() { cancel(); _ = cmd.Wait() })
	d.onConn(func(conn *pgx.Conn) { testdb.WaitForWaiter(d.t, conn, key, owner) })
}

// Waits made by real waiting acquires: a and b deadlock (each holds the
// key the other waits for; b's record as a client that does not check
// leaves it), d waits behind root blocker c.
func TestBlocking(t *testing.T) {
	t.Parallel()
	d := newDB(t)
	for _, held := range [][2]string{{"x", "a"}, {"y", "b"}, {"z", "c"}} {
		d.expect(0, "acquire", held[0], "--owner", held[1], "--ttl", "1h")
	}
	d.waitInBackground("y", "a")
	// b's wait closes the cycle, which the protocol refuses a waiting
	// acquire; a waiter whose check has not run yet, or a client that never
	// checks, leaves its record as this.
	d.onConn(func(conn *pgx.Conn) {
		if _, err := conn.Exec(context.Background(), `INSERT INTO distributed_lock_waiter
			(lock_key, owner_id, waiting_since, seen_until, ttl, claim_window)
			VALUES ('x', 'b', clock_timestamp(), clock_timestamp() + interval '1 hour',
			interval '1 minute', interval '1 second')`); err != nil {
			t.Fatal(err)
		}
	})
	d.waitInBackground("z", "d")

	r := d.expect(0, "blocking", "--json")
	var raw map[string]json.RawMessage
	if err := json.Unmarshal([]byte(r.stdout), &raw); err != nil || !slices.Equal(slices.Sorted(maps.Keys(raw)), []string{"deadlocks", "waits"}) {
		t.Fatalf("blocking --json = %s (%v); want an object of exactly waits and deadlocks", r.stdout, err)
	}
	var out struct {
		Waits []struct {
			Waiter    string   `json:"waiter"`
			Key       string   `json:"key"`
			Holders   []string `json:"holders"`
			WaitingMS int64    `json:"waiting_ms"`
		} `json:"waits"`
		Deadlocks [][]string `json:"deadlocks"`
	}
	decode(t, r, &out)
	got := map[string]string{}
	for _, w := range out.Waits {
		if w.WaitingMS < 0 || w.WaitingMS > time.Hour.Milliseconds() {
			t.Errorf("wait %+v: waiting_ms out of range", w)
		}
		got[w.Waiter+" "+w.Key] = strings.Join(w.Holders, ",")
	}
	if want := map[string]string{"a y": "b", "b x": "a", "d z": "c"}; !maps.Equal(got, want) {
		t.Errorf("waits (waiter key: holders) = %v; want %v", got, want)
	}
	if len(out.Deadlocks) != 1 || !slices.Equal(out.Deadlocks[0], []string{"a", "b"}) {
		t.Errorf("deadlocks = %q; want one ring [a b]", out.Deadlocks)
	}

	text := d.expect(0, "blocking")
	for _, want := range []string{"WAITER  KEY  HOLDERS  WAITING", "root blockers: c", "deadlock: a → b → a"} {
		if !strings.Contains(text.stdout, want) {
			t.Errorf("blocking lacks %q:\n%s", want, text.stdout)
		}
	}
	for _, line := range []string{"a       y    b", "b       x    a", "d       z    c"} {
		if !strings.Contains(text.stdout, line) {
			t.Errorf("blocking lacks the row %q:\n%s", line, text.stdout)
		}
	}
}

func TestBlockingNobodyWaits(t *testing.T) {
	t.Parallel()
	d := newDB(t)
	d.expect(0, "acquire", "k", "--owner", "a")
	if r := d.expect(0, "blocking"); r.stdout != "no owner is waiting\n" {
		t.Errorf("blocking with no waits: %s", r)
	}
	if r := d.expect(0, "blocking", "--json"); r.stdout != `{"waits":[],"deadlocks":[]}`+"\n" {
		t.Errorf("blocking --json with no waits: %s", r)
	}
}
