package cli_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lockctl/lockctl/internal/testdb"
	"github.com/lockctl/lockctl/store"
)

// sessionJSON is one element of `sessions --json`.
type sessionJSON struct {
	ID          int64          `json:"id"`
	Owner       string         `json:"owner"`
	Host        string         `json:"host"`
	PID         int            `json:"pid"`
	Leases      int            `json:"leases"`
	State       string         `json:"state"`
	RemainingMs int64          `json:"remaining_ms"`
	ExpiresAt   time.Time      `json:"expires_at"`
	TTLMs       int64          `json:"ttl_ms"`
	OpenedAt    time.Time      `json:"opened_at"`
	RenewedAt   *time.Time     `json:"renewed_at"`
	Metadata    map[string]any `json:"metadata"`
}

func sessionsJSON(t *testing.T, d db) []sessionJSON {
	t.Helper()
	var rows []sessionJSON
	decode(t, d.expect(0, "sessions", "--json"), &rows)
	return rows
}

// While `lockctl run k1 k2` holds its keys, another process lists its
// session (owner, this host, run's pid, both leases, live); end-session
// ends it under --actor: run's command gets SIGTERM, run exits 4, the keys
// are force-expired, and the log has a session_ended event, shown as
// "session N" where a key would be.
func TestEndSessionStopsRun(t *testing.T) {
	t.Parallel()
	d := newDB(t)
	dir := t.TempDir()
	p := d.start(append([]string{"run", "k1", "k2", "--owner", "runner", "--ttl", "3s", "--grace", "20s", "--"},
		script(dir, `trap 'echo term > $DIR/term; exit 9' TERM; touch $DIR/started; while :; do sleep 0.1; done`)...)...)
	p.waitForFile(filepath.Join(dir, "started"))

	var s sessionJSON
	testdb.Eventually(t, 10*time.Second, "run's session holding both keys", func() bool {
		rows := sessionsJSON(t, d)
		if len(rows) == 1 {
			s = rows[0]
		}
		return len(rows) == 1 && rows[0].Leases == 2
	})
	if s.Owner != "runner" || s.Host == "" || s.PID != p.cmd.Process.Pid || s.State != "live" ||
		s.RemainingMs <= 0 || s.RemainingMs > 3000 || s.TTLMs != 3000 || s.ExpiresAt.Location() != time.UTC {
		t.Fatalf("run's session = %+v; want runner's, pid %d, live, within its 3s", s, p.cmd.Process.Pid)
	}
	id := strconv.FormatInt(s.ID, 10)
	text := d.expect(0, "sessions").stdout
	lines := strings.Split(strings.TrimSpace(text), "\n")
	if len(lines) != 2 || strings.Join(strings.Fields(lines[0]), " ") != "ID OWNER HOST PID LEASES STATE REMAINING" {
		t.Fatalf("sessions printed:\n%s", text)
	}
	if f := strings.Fields(lines[1]); len(f) != 7 || f[0] != id || f[1] != "runner" || f[2] != s.Host ||
		f[3] != strconv.Itoa(s.PID) || f[4] != "2" || f[5] != "live" {
		t.Fatalf("sessions row %q; want %s runner %s %d 2 live", lines[1], id, s.Host, s.PID)
	}

	r := d.expect(0, "end-session", id, "--reason", "hung job", "--actor", "alice@ops")
	if want := "ended session " + id + ": 2 leases force-expired, by alice@ops"; strings.TrimSpace(r.stdout) != want {
		t.Fatalf("end-session printed %q; want %q", r.stdout, want)
	}
	ran := p.wait()
	if ran.code != 4 || !strings.Contains(ran.stderr, "lost the lease on k1") || !strings.Contains(ran.stderr, "force-expired by alice@ops (hung job)") ||
		!strings.Contains(ran.stderr, "exited (status 9) after SIGTERM") {
		t.Fatalf("run after its session ended: %s\nwant exit 4, the loss explained, the command stopped", ran)
	}
	if got := readFile(t, filepath.Join(dir, "term")); got != "term\n" {
		t.Fatalf("the command's TERM trap wrote %q", got)
	}
	for _, key := range []string{"k1", "k2"} {
		if got := d.json(0, "acquire", key, "--owner", "next"); got.Outcome != "stolen" {
			t.Errorf("acquire %s after the session ended = %+v; want stolen (force-expired)", key, got)
		}
	}
	if rows := sessionsJSON(t, d); len(rows) != 0 {
		t.Errorf("sessions after end-session = %+v; want none", rows)
	}
	if r := d.expect(0, "sessions"); strings.TrimSpace(r.stdout) != "no sessions" {
		t.Errorf("sessions printed %q; want no sessions", r.stdout)
	}

	events := eventsJSON(t, d)
	var ended *eventJSON
	for i, e := range events {
		if e.Kind == "session_ended" {
			ended = &events[i]
		}
	}
	if ended == nil || ended.Key != "" || ended.Actor != "alice@ops" || ended.Owner == nil || *ended.Owner != "runner" ||
		ended.Detail["session_id"] != float64(s.ID) || ended.Detail["leases"] != float64(2) || ended.Detail["reason"] != "hung job" {
		t.Fatalf("session_ended event %+v in %+v", ended, events)
	}
	shown := false
	for _, line := range strings.Split(d.expect(0, "events").stdout, "\n") {
		if f := strings.Fields(line); len(f) > 4 && f[1] == "session_ended" {
			shown = true
			if f[2] != "session" || f[3] != id || f[4] != "runner" {
				t.Errorf("events line %q; want the session where the key goes, then its owner", line)
			}
		}
	}
	if !shown {
		t.Error("events shows no session_ended line")
	}
}

// end-session: exit 4 for a session there is not (ended already, or never
// was), with --json too; exit 2 for an ID that is not a positive number,
// before connecting.
func TestEndSessionRefusals(t *testing.T) {
	t.Parallel()
	d := newDB(t)
	r := d.expect(4, "end-session", "999999")
	if !strings.Contains(r.stderr, "no session 999999") {
		t.Errorf("unknown session: %s", r)
	}
	var got map[string]any
	decode(t, d.expect(4, "end-session", "999999", "--json"), &got)
	if got["outcome"] != "gone" || got["id"] != float64(999999) || got["expired"] != float64(0) {
		t.Errorf("unknown session --json: %v", got)
	}
	for _, bad := range []string{"abc", "0", "1.5", "12x", "99999999999999999999"} {
		r := run(t, "end-session", bad, "--dsn", "postgres://nobody@127.0.0.1:1/none")
		if r.code != 2 || !strings.Contains(r.stderr, "invalid ID") {
			t.Errorf("end-session %q: %s\nwant exit 2, before connecting", bad, r)
		}
	}
	d.expect(2, "end-session")
	d.expect(2, "end-session", "--", "-3")
}

// Owner and host come from whoever opened the session: shown escaped, a
// control sequence never reaches the terminal (JSON escapes them too).
func TestSessionsEscapeHostileText(t *testing.T) {
	t.Parallel()
	d := newDB(t)
	pool := testdb.Pool(t, d.dsn)
	if _, err := store.OpenSession(context.Background(), pool, store.SessionParams{
		Owner: "bad\x1b[31mowner", TTL: time.Hour, Host: "h\x1b]2;owned\x07\u202e", PID: 42,
		Metadata: []byte(`{"note": "\u001b[2J"}`),
	}); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"sessions"}, {"sessions", "--json"}} {
		r := d.expect(0, args...)
		if strings.ContainsAny(r.stdout, "\x1b\x07\u202e") {
			t.Errorf("%s printed a raw control sequence: %q", args, r.stdout)
		}
	}
	if out := d.expect(0, "sessions").stdout; !strings.Contains(out, `bad\x1b[31mowner`) || !strings.Contains(out, `h\x1b]2;owned\x07`) {
		t.Errorf("sessions shows %q; want owner and host escaped", out)
	}
	rows := sessionsJSON(t, d)
	if len(rows) != 1 || rows[0].Owner != "bad\x1b[31mowner" || rows[0].Host != "h\x1b]2;owned\x07\u202e" ||
		rows[0].Metadata["note"] != "\x1b[2J" {
		b, _ := json.Marshal(rows)
		t.Errorf("sessions --json = %s; want the text as stored", b)
	}
}
