package cli_test

import (
	"encoding/json"
	"os"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/lockctl/lockctl/internal/testdb"
)

// lsRow is one element of `ls --json`.
type lsRow struct {
	Key           string         `json:"key"`
	Owner         string         `json:"owner"`
	Token         int64          `json:"token"`
	ExpiresAt     time.Time      `json:"expires_at"`
	TTLMs         int64          `json:"ttl_ms"`
	State         string         `json:"state"`
	RemainingMs   int64          `json:"remaining_ms"`
	HeldForMs     int64          `json:"held_for_ms"`
	AcquiredAt    time.Time      `json:"acquired_at"`
	RenewedAt     *time.Time     `json:"renewed_at"`
	RenewCount    int32          `json:"renew_count"`
	ReleasedAt    *time.Time     `json:"released_at"`
	GrantKind     string         `json:"grant_kind"`
	PreviousOwner *string        `json:"previous_owner"`
	PreviousToken *int64         `json:"previous_token"`
	Metadata      map[string]any `json:"metadata"`
	DelayUntil    *time.Time     `json:"delay_until"`
	KeptUntil     *time.Time     `json:"kept_until"`
	Mode          string         `json:"mode"`
	Permits       int            `json:"permits"`
	Holders       []holderJSON   `json:"holders"`
}

func lsJSON(t *testing.T, d db) []lsRow {
	t.Helper()
	r := d.expect(0, "ls", "--json")
	var rows []lsRow
	decode(t, r, &rows)
	return rows
}

// makeStates leaves one held, one expired and one free lock; the expired
// and the free one have been so for 200ms.
func makeStates(t *testing.T, d db) (held, expired, free jsonResult) {
	t.Helper()
	held = d.json(0, "acquire", "a-held", "--owner", "alice", "--ttl", "1m")
	expired = d.json(0, "acquire", "b-expired", "--owner", "bob", "--ttl", "1m")
	d.expireLease("b-expired")
	free = d.json(0, "acquire", "c-free", "--owner", "carol")
	d.json(0, "release", "c-free", "--owner", "carol", "--token", tokenArg(free.Token))
	d.ageLock("b-expired", 200*time.Millisecond)
	d.ageLock("c-free", 200*time.Millisecond)
	return held, expired, free
}

func TestLsJSON(t *testing.T) {
	t.Parallel()
	d := newDB(t)
	if r := d.expect(0, "ls", "--json"); r.stdout != "[]\n" {
		t.Fatalf("ls --json of an empty table printed %q; want []", r.stdout)
	}
	held, expired, free := makeStates(t, d)
	rows := lsJSON(t, d)
	want := []struct {
		key, owner, state string
		token             int64
	}{
		{"a-held", "alice", "held", held.Token},
		{"b-expired", "bob", "expired", expired.Token},
		{"c-free", "carol", "free", free.Token},
	}
	if len(rows) != len(want) {
		t.Fatalf("ls --json = %+v; want %d rows", rows, len(want))
	}
	for i, w := range want {
		r := rows[i]
		if r.Key != w.key || r.Owner != w.owner || r.State != w.state || r.Token != w.token {
			t.Errorf("row %d = %+v; want %s by %s token %d, %s", i, r, w.key, w.owner, w.token, w.state)
		}
		if r.ExpiresAt.Location() != time.UTC || r.Metadata == nil || r.GrantKind != "acquired" {
			t.Errorf("row %d = %+v; want UTC times, metadata, grant kind", i, r)
		}
		if r.Mode != "exclusive" || r.Permits != 0 || r.Holders != nil {
			t.Errorf("row %d = %+v; want mode exclusive, without permits or holders", i, r)
		}
	}
	if rows[0].RemainingMs <= 0 || rows[0].RemainingMs > 60000 || rows[0].TTLMs != 60000 {
		t.Errorf("held row remaining %dms ttl %dms; want within the 1m TTL", rows[0].RemainingMs, rows[0].TTLMs)
	}
	if rows[1].RemainingMs >= 0 {
		t.Errorf("expired row remaining %dms; want negative", rows[1].RemainingMs)
	}
	if rows[2].ReleasedAt == nil {
		t.Errorf("free row has no released_at")
	}
}

func TestLsTable(t *testing.T) {
	t.Parallel()
	d := newDB(t)
	if r := d.expect(0, "ls"); r.stdout != "no locks\n" {
		t.Fatalf("ls of an empty table printed %q", r.stdout)
	}
	held, _, _ := makeStates(t, d)
	// A key and owner carrying terminal escape sequences are shown escaped.
	d.json(0, "acquire", "d-\x1b[31mred", "--owner", "evil\x1b]0;title\x07")

	r := d.expect(0, "ls")
	if strings.ContainsAny(r.stdout, "\x1b\x07") {
		t.Fatalf("ls sent raw control characters to the terminal: %q", r.stdout)
	}
	lines := strings.Split(strings.TrimSuffix(r.stdout, "\n"), "\n")
	if len(lines) != 5 {
		t.Fatalf("ls printed %d lines; want a header and 4 rows:\n%s", len(lines), r.stdout)
	}
	header := regexp.MustCompile(`^KEY +OWNER +TOKEN +STATE +REMAINING +HELD-FOR$`)
	if !header.MatchString(lines[0]) {
		t.Fatalf("header %q", lines[0])
	}
	col := strings.Index(lines[0], "TOKEN")
	wantRows := []*regexp.Regexp{
		regexp.MustCompile(`^a-held +alice +` + tokenArg(held.Token) + ` +held +\d+(\.\d)?m?s +\d+(\.\d)?m?s$`),
		regexp.MustCompile(`^b-expired +bob +\d+ +expired +- +\S+$`),
		regexp.MustCompile(`^c-free +carol +\d+ +free +- +-$`),
		regexp.MustCompile(`^d-\\x1b\[31mred +evil\\x1b\]0;title\\x07 +\d+ +held `),
	}
	for i, re := range wantRows {
		line := lines[i+1]
		if !re.MatchString(line) {
			t.Errorf("row %d = %q; want %s", i, line, re)
		}
		// Aligned: every row's token starts under TOKEN.
		if c := line[col]; c < '0' || c > '9' || line[col-1] != ' ' {
			t.Errorf("row %d = %q: token not aligned under TOKEN at column %d", i, line, col)
		}
	}
}

func TestPrune(t *testing.T) {
	t.Parallel()
	d := newDB(t)
	makeStates(t, d)

	// Nothing has been free for an hour.
	var counts struct{ Locks, Events, Waiters, Sessions int64 }
	decode(t, d.expect(0, "prune", "--older", "1h", "--json"), &counts)
	if counts.Locks != 0 || len(lsJSON(t, d)) != 3 {
		t.Fatalf("prune --older 1h deleted %d rows; want none", counts.Locks)
	}

	// Expired and free rows have been free for over 100ms by now.
	decode(t, d.expect(0, "prune", "--older", "50ms", "--json"), &counts)
	rows := lsJSON(t, d)
	if counts.Locks != 2 || len(rows) != 1 || rows[0].Key != "a-held" {
		t.Fatalf("prune --older 50ms deleted %d; left %+v; want only a-held left", counts.Locks, rows)
	}

	r := d.expect(0, "prune", "--older", "1ms", "--events-older", "1ms")
	if !regexp.MustCompile(`^pruned 0 lock rows free for more than 1ms, [1-9]\d* events, 0 dead waiter records, 0 lapsed sessions\n$`).MatchString(r.stdout) {
		t.Fatalf("prune printed %q", r.stdout)
	}
}

func lsKeys(t *testing.T, d db, args ...string) string {
	t.Helper()
	return keysOf(t, cleanEnv(), append(args, "--dsn", d.dsn)...)
}

// --prefix and --state narrow the listing; % and _ in a prefix are plain
// characters.
func TestLsFilters(t *testing.T) {
	t.Parallel()
	d := newDB(t)
	makeStates(t, d)
	d.json(0, "acquire", "100%", "--owner", "x")
	d.json(0, "acquire", "1000", "--owner", "x")
	for _, c := range []struct {
		args []string
		want string
	}{
		{nil, "100% 1000 a-held b-expired c-free"},
		{[]string{"--prefix", "b-"}, "b-expired"},
		{[]string{"--prefix", "100%"}, "100%"},
		{[]string{"--prefix", "1_0"}, ""},
		{[]string{"--state", "held,free"}, "100% 1000 a-held c-free"},
		{[]string{"--state", "expired", "--state", "free"}, "b-expired c-free"},
		{[]string{"--state", "expired", "--prefix", "a-"}, ""},
	} {
		if got := lsKeys(t, d, c.args...); got != c.want {
			t.Errorf("ls %s lists %q; want %q", strings.Join(c.args, " "), got, c.want)
		}
	}
	r := d.expect(2, "ls", "--state", "held,stuck")
	if !strings.Contains(r.stderr, `invalid --state "held,stuck": "stuck" is not one of held, expiring, expired, delayed, kept, free`) {
		t.Errorf("ls --state held,stuck: %s", r)
	}
}

// ls --watch lists again every --interval: a grant shows up in a later
// listing; a signal ends it with exit 0.
func TestLsWatch(t *testing.T) {
	t.Parallel()
	d := newDB(t)
	p := d.start("ls", "--watch", "--interval", "100ms", "--prefix", "w:", "--json")
	p.waitForOutput("[]\n")
	d.json(0, "acquire", "w:1", "--owner", "watcher")
	d.json(0, "acquire", "other", "--owner", "watcher")
	p.waitForOutput(`"key":"w:1"`)
	if err := p.cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	r := p.wait()
	if r.code != 0 || strings.Contains(r.stdout, `"key":"other"`) {
		t.Fatalf("%s\nwant exit 0 and only w: keys", r)
	}
	// Every line is one whole listing.
	for _, line := range strings.Split(strings.TrimSpace(r.stdout), "\n") {
		var rows []lsRow
		if err := json.Unmarshal([]byte(line), &rows); err != nil {
			t.Fatalf("line %q is not a JSON array: %v", line, err)
		}
	}

	text := d.start("ls", "--watch", "--interval", "100ms")
	text.waitForOutput("w:1")
	text.waitForOutput("Every 100ms: ls")
	if err := text.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if r := text.wait(); r.code != 0 || strings.Contains(r.stdout, "\x1b") {
		t.Fatalf("%s\nwant exit 0 and no screen clearing on a pipe", r)
	}
}

// A shared key whose holders' leases ran out is listed by the state it is
// shown in: expired, not held (#39 bug 1).
func TestLsStateOfALapsedGroup(t *testing.T) {
	t.Parallel()
	d := newDB(t)
	d.json(0, "acquire", "s", "--shared", "--owner", "r1", "--ttl", "1s")
	d.json(0, "acquire", "s", "--shared", "--owner", "r2", "--ttl", "1s")
	d.onConn(func(conn *pgx.Conn) { testdb.Clock(t, conn).Advance(2 * time.Second) })
	if got := lsKeys(t, d, "--state", "held"); got != "" {
		t.Errorf("ls --state held lists %q; want nothing: s's holders' leases ran out", got)
	}
	if got := lsKeys(t, d, "--state", "expired"); got != "s" {
		t.Errorf("ls --state expired lists %q; want s", got)
	}
}
