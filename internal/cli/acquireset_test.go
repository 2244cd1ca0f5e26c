package cli_test

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/lockctl/lockctl/internal/testdb"
)

// setResult is acquire's --json object for several keys.
type setResult struct {
	Owner  string `json:"owner"`
	Leases []struct {
		Key       string    `json:"key"`
		Token     int64     `json:"token"`
		ExpiresAt time.Time `json:"expires_at"`
	} `json:"leases"`
}

// holders reads ls --json: each key's owner while held, "" when not.
func (d db) holders(keys ...string) map[string]string {
	d.t.Helper()
	var rows []struct {
		Key   string `json:"key"`
		Owner string `json:"owner"`
		State string `json:"state"`
	}
	if err := json.Unmarshal([]byte(d.expect(0, "ls", "--json").stdout), &rows); err != nil {
		d.t.Fatal(err)
	}
	got := map[string]string{}
	for _, k := range keys {
		got[k] = ""
	}
	for _, r := range rows {
		if _, asked := got[r.Key]; asked && (r.State == "held" || r.State == "expiring") {
			got[r.Key] = r.Owner
		}
	}
	return got
}

// Several keys are taken all or none, from separate processes: granted,
// one JSON object with a lease per key in the order named; refused when
// any one is held (exit 3, the key named), and then nothing is taken.
func TestAcquireSeveralKeysAllOrNone(t *testing.T) {
	t.Parallel()
	d := newDB(t)
	var got setResult
	decode(t, d.expect(0, "acquire", "c", "a", "b", "--owner", "o1", "--json"), &got)
	if got.Owner != "o1" || len(got.Leases) != 3 || got.Leases[0].Key != "c" || got.Leases[1].Key != "a" || got.Leases[2].Key != "b" {
		t.Fatalf("acquire c a b --json = %+v; want o1's leases on c, a, b in that order", got)
	}
	for _, l := range got.Leases {
		if l.Token <= 0 || l.ExpiresAt.IsZero() {
			t.Errorf("lease %+v; want a token and an expiry", l)
		}
	}
	if h := d.holders("a", "b", "c"); h["a"] != "o1" || h["b"] != "o1" || h["c"] != "o1" {
		t.Fatalf("holders %v; want o1 on every key", h)
	}

	r := d.expect(3, "acquire", "new-1", "b", "new-2", "--owner", "o2")
	if !strings.Contains(r.stderr, "b is held by o1") {
		t.Errorf("refusal %q does not name b and its holder", r.stderr)
	}
	if h := d.holders("new-1", "b", "new-2"); h["new-1"] != "" || h["new-2"] != "" || h["b"] != "o1" {
		t.Errorf("after the refusal: holders %v; want nothing of o2's", h)
	}
	held := d.json(3, "acquire", "new-1", "b", "--owner", "o2", "--json")
	if held.Key != "b" || held.Owner != "o1" || held.Outcome != "held" {
		t.Errorf("refusal --json = %+v; want b held by o1", held)
	}

	r = d.expect(0, "acquire", "x", "y", "--owner", "o3")
	if lines := strings.Split(strings.TrimSpace(r.stdout), "\n"); len(lines) != 2 ||
		!strings.HasPrefix(lines[0], "acquired x ") || !strings.HasPrefix(lines[1], "acquired y ") {
		t.Errorf("acquire x y printed %q; want a line per key", r.stdout)
	}
}

// A key named twice, or more keys than a set may have, is a usage error
// (exit 2) before anything is taken.
func TestAcquireKeySetUsage(t *testing.T) {
	t.Parallel()
	d := newDB(t)
	r := d.expect(2, "acquire", "a", "b", "a", "--owner", "o")
	if !strings.Contains(r.stderr, "KEY a is named twice") {
		t.Errorf("stderr %q; want it to say a is named twice", r.stderr)
	}
	many := []string{"acquire"}
	for i := range 129 {
		many = append(many, fmt.Sprintf("k%d", i))
	}
	r = d.expect(2, many...)
	if !strings.Contains(r.stderr, "129 keys: at most 128") {
		t.Errorf("stderr %q; want it to say at most 128 keys", r.stderr)
	}
	if h := d.holders("a", "b", "k0"); h["a"] != "" || h["b"] != "" || h["k0"] != "" {
		t.Errorf("holders %v after usage errors; want none", h)
	}
	d.expect(2, "run", "a", "a", "--", "true")
}

// acquire K1 K2 --wait waits until it can have both, then prints both
// leases; the key it waited for first is not taken from it meanwhile.
func TestAcquireSeveralKeysWaits(t *testing.T) {
	t.Parallel()
	d := newDB(t)
	holder := d.json(0, "acquire", "b", "--owner", "holder", "--ttl", "1h")
	w := d.start("acquire", "a", "b", "--owner", "set", "--wait", "30s", "--json")
	d.onConn(func(conn *pgx.Conn) {
		testdb.WaitForWaiter(t, conn, "a", "set")
		testdb.WaitForWaiter(t, conn, "b", "set")
	})
	d.expect(3, "acquire", "a", "--owner", "barger")
	d.expect(0, "release", "b", "--owner", "holder", "--token", tokenArg(holder.Token))
	r := w.wait()
	var got setResult
	if r.code != 0 {
		t.Fatalf("the waiting set: %s", r)
	}
	decode(t, r, &got)
	if len(got.Leases) != 2 || got.Leases[1].Key != "b" || got.Leases[1].Token <= holder.Token {
		t.Fatalf("the waiting set = %+v; want a and b, b's token above %d", got, holder.Token)
	}
	if h := d.holders("a", "b"); h["a"] != "set" || h["b"] != "set" {
		t.Errorf("holders %v; want the set on both", h)
	}
}

// A wait that closes a cycle of waits exits 5 and names the cycle; the
// other waiter is still waiting.
func TestDeadlockExitCode(t *testing.T) {
	t.Parallel()
	d := newDB(t)
	d.expect(0, "acquire", "x", "--owner", "A", "--ttl", "1h")
	d.expect(0, "acquire", "y", "--owner", "B", "--ttl", "1h")
	d.waitInBackground("y", "A")
	r := d.expect(5, "acquire", "x", "--owner", "B", "--wait", "30s")
	if !strings.Contains(r.stderr, "deadlock: B waits for x (held or queued for by A), A waits for y (held or queued for by B)") {
		t.Errorf("stderr %q; want the cycle named", r.stderr)
	}
	var dead struct {
		Error          string   `json:"error"`
		Outcome        string   `json:"outcome"`
		Keys           []string `json:"keys"`
		RequestedOwner string   `json:"requested_owner"`
		Cycle          []struct {
			Owner string `json:"owner"`
			Key   string `json:"key"`
		} `json:"cycle"`
	}
	decode(t, d.expect(5, "acquire", "x", "z", "--owner", "B", "--wait", "30s", "--json"), &dead)
	if dead.Error != "deadlock" || dead.Outcome != "deadlock" || strings.Join(dead.Keys, " ") != "x z" || dead.RequestedOwner != "B" ||
		len(dead.Cycle) != 2 || dead.Cycle[0].Owner != "B" || dead.Cycle[1].Key != "y" {
		t.Errorf("--json = %+v; want error deadlock and the cycle B→x, A→y", dead)
	}
	if h := d.holders("z"); h["z"] != "" {
		t.Errorf("z held by %q after the refused set; want nothing taken", h["z"])
	}
}

// run K1 K2 -- CMD holds both keys while CMD runs, gives it each key's
// token, and releases both after.
func TestRunSeveralKeys(t *testing.T) {
	t.Parallel()
	d := newDB(t)
	dir := t.TempDir()
	body := `echo "$LOCKCTL_KEY_COUNT $LOCKCTL_KEY_1 $LOCKCTL_TOKEN_1 $LOCKCTL_KEY_2 $LOCKCTL_TOKEN_2 $LOCKCTL_KEY $LOCKCTL_TOKEN"
"` + binary + `" acquire k2 --owner intruder --dsn "` + d.dsn + `" 2>/dev/null; echo "intruder=$?"`
	r := d.expect(0, append([]string{"run", "k1", "k2", "--owner", "runner", "--"}, script(dir, body)...)...)
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	f := strings.Fields(lines[0])
	if len(lines) != 2 || len(f) != 7 || f[0] != "2" || f[1] != "k1" || f[3] != "k2" || f[5] != "k1" || f[6] != f[2] ||
		lines[1] != "intruder=3" {
		t.Fatalf("command printed %q; want 2, each key and token, the first again as LOCKCTL_KEY, then intruder=3", r.stdout)
	}
	t2, _ := strconv.ParseInt(f[4], 10, 64)
	if next := d.json(0, "acquire", "k2", "--owner", "next"); next.Outcome != "acquired" || next.Token <= t2 {
		t.Fatalf("acquire after run = %+v; want acquired (released, not expired) above token %d", next, t2)
	}
}
