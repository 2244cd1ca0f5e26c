package cli_test

import (
	"context"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/lockctl/lockctl/internal/testdb"
)

// eventJSON is one element of `events --json`.
type eventJSON struct {
	ID            int64          `json:"id"`
	Time          time.Time      `json:"time"`
	Key           string         `json:"key"`
	Kind          string         `json:"kind"`
	Owner         *string        `json:"owner"`
	Token         *int64         `json:"token"`
	Actor         string         `json:"actor"`
	Role          string         `json:"role"`
	PreviousOwner *string        `json:"previous_owner"`
	PreviousToken *int64         `json:"previous_token"`
	Detail        map[string]any `json:"detail"`
}

func eventsJSON(t *testing.T, d db, args ...string) []eventJSON {
	t.Helper()
	r := d.expect(0, append(append([]string{"events"}, args...), "--json")...)
	var out []eventJSON
	decode(t, r, &out)
	return out
}

func kinds(events []eventJSON) string {
	var ks []string
	for _, e := range events {
		ks = append(ks, e.Key+":"+e.Kind)
	}
	return strings.Join(ks, " ")
}

// A key's history, oldest first: grant, operator expiry (with the actor),
// the steal that followed it (naming whom it took over from), release.
func TestEvents(t *testing.T) {
	t.Parallel()
	d := newDB(t)
	if got := eventsJSON(t, d); len(got) != 0 {
		t.Fatalf("events of an empty log = %+v; want []", got)
	}
	first := d.json(0, "acquire", "k", "--owner", "a", "--ttl", "1m")
	d.json(3, "acquire", "k", "--owner", "b")
	d.json(0, "expire", "k", "--actor", "ops")
	stolen := d.json(0, "acquire", "k", "--owner", "b")
	d.json(0, "acquire", "other", "--owner", "c")
	d.json(0, "release", "k", "--owner", "b", "--token", tokenArg(stolen.Token))

	got := eventsJSON(t, d, "k")
	if kinds(got) != "k:acquired k:force_expired k:stolen k:released" {
		t.Fatalf("events k = %s; want acquired, force_expired, stolen, released", kinds(got))
	}
	if got[1].Actor != "ops" || *got[1].Token != first.Token {
		t.Errorf("force_expired event = %+v; want actor ops, token %d", got[1], first.Token)
	}
	// The role that made each call, beside what the caller claimed.
	var role string
	d.onConn(func(conn *pgx.Conn) {
		if err := conn.QueryRow(context.Background(), `SELECT session_user`).Scan(&role); err != nil {
			t.Fatal(err)
		}
	})
	for _, e := range got {
		if e.Role != role {
			t.Errorf("%s event's role %q; want %q, the role lockctl connected as", e.Kind, e.Role, role)
		}
	}
	if *got[2].Owner != "b" || *got[2].PreviousOwner != "a" || *got[2].PreviousToken != first.Token {
		t.Errorf("stolen event = %+v; want b taking over a's token %d", got[2], first.Token)
	}
	for i := 1; i < len(got); i++ {
		if got[i].ID <= got[i-1].ID || got[i].Time.Before(got[i-1].Time) {
			t.Errorf("events out of order: %+v before %+v", got[i-1], got[i])
		}
	}

	// --limit keeps the newest, still oldest first.
	if last := eventsJSON(t, d, "--limit", "2"); kinds(last) != "other:acquired k:released" {
		t.Errorf("events --limit 2 = %s; want the two newest of all keys", kinds(last))
	}

	// --since drops what is older, by the database's clock.
	pool := testdb.Pool(t, d.dsn)
	if _, err := pool.Exec(context.Background(), `INSERT INTO distributed_lock_event (occurred_at, lock_key, kind, owner_id, fence_token, actor)
		VALUES (clock_timestamp() - interval '2 hours', 'k', 'acquired', 'ancient', 1, 'ancient')`); err != nil {
		t.Fatal(err)
	}
	if all := eventsJSON(t, d, "k"); len(all) != 5 {
		t.Errorf("events k after adding an old event: %s; want 5 events", kinds(all))
	}
	if recent := eventsJSON(t, d, "k", "--since", "1h"); kinds(recent) != "k:acquired k:force_expired k:stolen k:released" {
		t.Errorf("events k --since 1h = %s; want the 2-hour-old event left out", kinds(recent))
	}
}

// The text form is a table, with database text escaped.
func TestEventsText(t *testing.T) {
	t.Parallel()
	d := newDB(t)
	if r := d.expect(0, "events"); r.stdout != "no events\n" {
		t.Fatalf("events of an empty log printed %q", r.stdout)
	}
	d.json(0, "acquire", "evil\x1b[2J", "--owner", "a\x07b")
	d.json(0, "expire", "evil\x1b[2J", "--actor", "ops")
	r := d.expect(0, "events")
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	if len(lines) != 3 || !strings.HasPrefix(lines[0], "TIME") || !strings.Contains(lines[2], "force_expired") ||
		!strings.Contains(lines[2], "ops") {
		t.Fatalf("events printed\n%s\nwant a header, the grant and the expiry by ops", r.stdout)
	}
	if strings.ContainsAny(r.stdout, "\x1b\x07") || !strings.Contains(r.stdout, `evil\x1b[2J`) {
		t.Fatalf("events printed control characters unescaped:\n%q", r.stdout)
	}
}

func TestEventsUsage(t *testing.T) {
	t.Parallel()
	dsn, _ := closedPortDSN(t, "pw")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"events", "--limit", "0"}, "invalid --limit 0"},
		{[]string{"events", "--since", "soon"}, `invalid --since "soon"`},
		{[]string{"events", "a", "b"}, `unexpected argument "b"`},
	} {
		r := run(t, append(c.args, "--dsn", dsn)...)
		if r.code != 2 || !strings.Contains(r.stderr, c.want) {
			t.Errorf("lockctl %s: %s\nwant exit 2 and %q", strings.Join(c.args, " "), r, c.want)
		}
	}
}

// A wait refused as a deadlock is in the history, on the key it waited
// for: by the refused owner, the cycle in its detail (--json) and in words
// (the table).
func TestEventsShowADeadlockRefusal(t *testing.T) {
	t.Parallel()
	d := newDB(t)
	d.expect(0, "acquire", "x", "--owner", "A", "--ttl", "1h")
	d.expect(0, "acquire", "y", "--owner", "B", "--ttl", "1h")
	d.waitInBackground("y", "A")
	d.expect(5, "acquire", "x", "--owner", "B", "--wait", "30s")

	got := eventsJSON(t, d, "x")
	if kinds(got) != "x:acquired x:deadlock_refused" {
		t.Fatalf("events x = %s; want the grant and the refusal", kinds(got))
	}
	refused := got[1]
	wantCycle := []any{map[string]any{"owner": "B", "key": "x"}, map[string]any{"owner": "A", "key": "y"}}
	if refused.Owner == nil || *refused.Owner != "B" || refused.Actor != "B" || refused.Token != nil ||
		!reflect.DeepEqual(refused.Detail, map[string]any{"cycle": wantCycle}) {
		t.Errorf("deadlock_refused event = %+v; want B's, no token, detail the cycle %v", refused, wantCycle)
	}
	if other := eventsJSON(t, d, "y"); kinds(other) != "y:acquired" {
		t.Errorf("events y = %s; want no refusal on the key the standing wait is for", kinds(other))
	}

	r := d.expect(0, "events", "x")
	if !strings.Contains(r.stdout, "deadlock_refused") || !strings.Contains(r.stdout, "cycle B waits for x → A waits for y → B") {
		t.Errorf("events x printed\n%s\nwant the refusal with its cycle in words", r.stdout)
	}
}
