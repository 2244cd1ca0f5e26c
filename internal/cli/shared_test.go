package cli_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lockctl/lockctl/internal/lockview"
	"github.com/lockctl/lockctl/internal/testdb"
)

// A semaphore of 2 permits: two owners hold it, a third is refused (exit
// 3) until one of them ends; asking with other permits while it is held is
// a conflict (exit 3) that says so.
func TestAcquirePermits(t *testing.T) {
	t.Parallel()
	d := newDB(t)
	a := d.json(0, "acquire", "pool", "--permits", "2", "--owner", "a", "--ttl", "1m")
	b := d.json(0, "acquire", "pool", "--permits", "2", "--owner", "b", "--ttl", "1m")
	for _, got := range []jsonResult{a, b} {
		if got.Outcome != "acquired" || got.Mode != "semaphore" || got.Permits != 2 || got.Token <= 0 || got.State != "held" {
			t.Fatalf("acquire --permits 2 = %+v; want acquired, a semaphore of 2", got)
		}
	}
	if a.Token == b.Token {
		t.Fatalf("both holders got token %d; want a token each", a.Token)
	}

	full := d.json(3, "acquire", "pool", "--permits", "2", "--owner", "c")
	if full.Error != "held" || full.Mode != "semaphore" || full.Permits != 2 || len(full.Holders) != 2 || full.RequestedOwner != "c" ||
		full.Owner != "a" || full.Token != a.Token || full.TTLMs != 60000 {
		t.Fatalf("third permit = %+v; want held, a semaphore of 2 with both holders, naming a's permit (the first to end)", full)
	}
	r := d.expect(3, "acquire", "pool", "--permits", "2", "--owner", "c")
	if r.stdout != "" || !strings.Contains(r.stderr, "pool is held as a semaphore of 2 permits by 2 holders; every permit is taken, the first frees in") {
		t.Fatalf("third permit, text: %s", r)
	}

	r = d.expect(3, "acquire", "pool", "--permits", "3", "--owner", "c")
	want := `lockctl acquire: "pool" is held as a semaphore of 2 permits by 2 holders; cannot take it as a semaphore of 3 permits until they end`
	if r.stdout != "" || strings.TrimSpace(r.stderr) != want {
		t.Fatalf("--permits 3 on a semaphore of 2: %s\nwant stderr %q", r, want)
	}
	conflict := d.json(3, "acquire", "pool", "--permits", "3", "--owner", "c")
	if conflict.Error != "conflict" || conflict.Outcome != "conflict" || conflict.Mode != "semaphore" || conflict.Permits != 2 ||
		len(conflict.Holders) != 2 || !strings.Contains(conflict.Detail, "as a semaphore of 3 permits") {
		t.Fatalf("--permits 3 --json = %+v; want a conflict naming the semaphore of 2 and its holders", conflict)
	}
	d.expect(3, "acquire", "pool", "--shared", "--owner", "c")

	// Renewed by its holder: same token.
	again := d.json(0, "acquire", "pool", "--permits", "2", "--owner", "a", "--ttl", "1m")
	if again.Outcome != "renewed" || again.Token != a.Token {
		t.Fatalf("acquire by a holder = %+v; want renewed, token %d", again, a.Token)
	}
	r = d.expect(0, "acquire", "pool", "--permits", "2", "--owner", "a")
	if !regexp.MustCompile(`^renewed pool token=\d+ owner=a expires in 30s \(one of 2 permits\)\n$`).MatchString(r.stdout) {
		t.Fatalf("text of a permit's grant: %q", r.stdout)
	}
}

// Shared: any number of holders, while an exclusive acquire is refused,
// naming how the key is held.
func TestAcquireShared(t *testing.T) {
	t.Parallel()
	d := newDB(t)
	r := d.expect(0, "acquire", "reports", "--shared", "--owner", "r1")
	if !regexp.MustCompile(`^acquired reports token=\d+ owner=r1 expires in 30s \(shared\)\n$`).MatchString(r.stdout) {
		t.Fatalf("acquire --shared printed %q", r.stdout)
	}
	r2 := d.json(0, "acquire", "reports", "--shared", "--owner", "r2")
	if r2.Outcome != "acquired" || r2.Mode != "shared" || r2.Permits != 0 {
		t.Fatalf("second acquire --shared = %+v; want acquired, shared", r2)
	}

	r = d.expect(3, "acquire", "reports", "--owner", "w")
	if !strings.Contains(r.stderr, "reports is held shared by 2 holders for up to another") {
		t.Fatalf("exclusive acquire of a shared key: %s", r)
	}
	held := d.json(3, "acquire", "reports", "--owner", "w")
	if held.Error != "held" || held.Mode != "shared" || len(held.Holders) != 2 || held.Owner != "*" {
		t.Fatalf("exclusive acquire of a shared key --json = %+v; want held shared by 2 holders", held)
	}
	owners := []string{held.Holders[0].Owner, held.Holders[1].Owner}
	slices.Sort(owners)
	if !slices.Equal(owners, []string{"r1", "r2"}) || held.Holders[1].RemainingMs <= 0 {
		t.Fatalf("holders = %+v; want r1 and r2 with time left", held.Holders)
	}
	d.expect(3, "acquire", "reports", "--permits", "2", "--owner", "w")

	// Held alone: a shared request is refused, naming the holder.
	d.json(0, "acquire", "solo", "--owner", "w")
	r = d.expect(3, "acquire", "solo", "--shared", "--owner", "r1")
	if !strings.Contains(r.stderr, "solo is held by w (token") {
		t.Fatalf("shared acquire of a key held alone: %s", r)
	}
}

// A permit's wait queues as a wait for the key alone does: it is woken by
// the release of a permit (not at its next recheck) and claims the lease
// for its TTL before it exits; a wait that runs out is a held refusal.
func TestAcquirePermitWait(t *testing.T) {
	t.Parallel()
	d := newDB(t)
	pool := testdb.Pool(t, d.dsn)
	a := d.json(0, "acquire", "one", "--permits", "1", "--owner", "a", "--ttl", "1m")
	r := d.expect(3, "acquire", "one", "--permits", "1", "--owner", "b", "--wait", "200ms")
	if !strings.Contains(r.stderr, "gave up after waiting 200ms") || !strings.Contains(r.stderr, "one is held as a semaphore of 1 permit by 1 holder") {
		t.Fatalf("a permit's wait that ran out: %s", r)
	}

	p := d.start("acquire", "one", "--permits", "1", "--owner", "b", "--wait", "30s", "--ttl", "1m", "--json")
	p.until("b queued for a permit", func() bool {
		ws, err := lockview.Waiters(context.Background(), pool, "one")
		return err == nil && len(ws) == 1 && ws[0].Owner == "b"
	})
	d.json(0, "release", "one", "--owner", "a", "--token", tokenArg(a.Token))
	released := time.Now()
	got := p.wait()
	if waited := time.Since(released); waited > 3*time.Second {
		t.Fatalf("the waiter took %s after the release; want it woken, not left to its recheck", waited)
	}
	var lease jsonResult
	decode(t, got, &lease)
	if lease.Owner != "b" || lease.Mode != "semaphore" || lease.Permits != 1 || lease.Token <= a.Token {
		t.Fatalf("a permit's wait = %+v; want granted to b once a released", lease)
	}
	rows := lsJSON(t, d)
	if len(rows[0].Holders) != 1 || rows[0].Holders[0].Owner != "b" || rows[0].Holders[0].RemainingMs < 30000 {
		t.Fatalf("after the wait: holders %+v; want b's lease claimed for its 1m TTL", rows[0].Holders)
	}
}

// Usage errors of --shared and --permits (exit 2, before connecting).
func TestHoldModeUsage(t *testing.T) {
	t.Parallel()
	dsn, _ := closedPortDSN(t, "pw")
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"acquire", "k", "--permits", "0"}, `invalid --permits "0": must be between 1 and 1000`},
		{[]string{"acquire", "k", "--permits", "1001"}, `invalid --permits "1001": must be between 1 and 1000`},
		{[]string{"acquire", "k", "--permits", "many"}, `invalid --permits "many": not a number`},
		{[]string{"acquire", "k", "--shared", "--permits", "2"}, `--shared and --permits cannot be used together`},
		{[]string{"acquire", "k1", "k2", "--shared"}, `--shared takes one KEY`},
		{[]string{"acquire", "k", "--permits", "2", "--lock-delay", "1s"}, `--lock-delay is for a lease held alone`},
		{[]string{"run", "k", "--shared", "--permits", "2", "--", "true"}, `--shared and --permits cannot be used together`},
		{[]string{"run", "k", "--permits", "0", "--", "true"}, `invalid --permits "0"`},
	}
	for _, c := range cases {
		r := run(t, append(c.args, "--dsn", dsn)...)
		if r.code != 2 || r.stdout != "" || !strings.Contains(r.stderr, c.want) {
			t.Errorf("lockctl %s: %s\nwant exit 2 naming %q", strings.Join(c.args, " "), r, c.want)
		}
	}
}

// lsRaw is ls --json with each element's fields as given, so a test sees
// which fields an element has.
func lsRaw(t *testing.T, d db) []map[string]json.RawMessage {
	t.Helper()
	var rows []map[string]json.RawMessage
	if err := json.Unmarshal([]byte(d.expect(0, "ls", "--json").stdout), &rows); err != nil {
		t.Fatal(err)
	}
	return rows
}

// ls shows each key's mode; a shared or semaphore key's holders with their
// leases, in JSON, and how many of them in the table's OWNER.
func TestLsSharedAndSemaphore(t *testing.T) {
	t.Parallel()
	d := newDB(t)
	alone := d.json(0, "acquire", "a-alone", "--owner", "w", "--ttl", "1m")
	p1 := d.json(0, "acquire", "b-pool", "--permits", "3", "--owner", "p1", "--ttl", "1m")
	d.json(0, "acquire", "b-pool", "--permits", "3", "--owner", "p2", "--ttl", "1m")
	d.json(0, "acquire", "c-shared", "--shared", "--owner", "s1", "--ttl", "1m")

	rows := lsJSON(t, d)
	if len(rows) != 3 {
		t.Fatalf("ls --json = %+v; want 3 rows", rows)
	}
	if r := rows[0]; r.Mode != "exclusive" || r.Owner != "w" || r.Token != alone.Token || r.Holders != nil || r.Permits != 0 {
		t.Errorf("key held alone = %+v; want mode exclusive, its owner, no holders", r)
	}
	pool := rows[1]
	if pool.Mode != "semaphore" || pool.Permits != 3 || pool.Owner != "*" || len(pool.Holders) != 2 || pool.State != "held" {
		t.Fatalf("semaphore = %+v; want mode semaphore, 3 permits, 2 holders", pool)
	}
	h := pool.Holders[0]
	if h.Owner != "p1" || h.Token != p1.Token || h.RemainingMs <= 0 || h.RemainingMs > 60000 || h.ExpiresAt.Location() != time.UTC {
		t.Errorf("first holder = %+v; want p1, token %d, with remaining_ms within its 1m", h, p1.Token)
	}
	if s := rows[2]; s.Mode != "shared" || s.Permits != 0 || len(s.Holders) != 1 || s.Holders[0].Owner != "s1" {
		t.Errorf("shared key = %+v; want mode shared, its one holder", s)
	}
	raw := lsRaw(t, d)
	for _, field := range []string{"holders", "permits"} {
		if _, ok := raw[0][field]; ok {
			t.Errorf("the key held alone has %q: %s", field, raw[0][field])
		}
	}

	table := d.expect(0, "ls").stdout
	for _, re := range []string{
		`(?m)^a-alone +w +\d+ +held `,
		`(?m)^b-pool +semaphore, 2/3 used +\d+ +held `,
		`(?m)^c-shared +shared, 1 holder +\d+ +held `,
	} {
		if !regexp.MustCompile(re).MatchString(table) {
			t.Errorf("ls table does not match %s:\n%s", re, table)
		}
	}
}

// run --shared and --permits hold a holder's lease while the command runs,
// renewed past its TTL by a Keepalive of its own, and release it after.
func TestRunShared(t *testing.T) {
	t.Parallel()
	d := newDB(t)
	dir := t.TempDir()
	body := `echo "$LOCKCTL_TOKEN"
"` + binary + `" acquire job --shared --owner other --dsn "` + d.dsn + `" >/dev/null; echo "shared=$?"
"` + binary + `" acquire job --owner writer --dsn "` + d.dsn + `" 2>/dev/null; echo "alone=$?"
sleep 1.5
"` + binary + `" ls --json --dsn "` + d.dsn + `" > $DIR/ls.json`
	// Two and a half TTLs; each renewal, sent a third of the way in, has
	// over 300ms of the trust window left to come back in on a loaded machine.
	r := d.expect(0, append([]string{"run", "job", "--shared", "--owner", "runner", "--ttl", "600ms", "--"}, script(dir, body)...)...)
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	if len(lines) != 3 || lines[1] != "shared=0" || lines[2] != "alone=3" {
		t.Fatalf("command printed %q; want its token, shared=0 (another reader) and alone=3 (no writer)", r.stdout)
	}
	var rows []lsRow
	decode(t, result{stdout: readFile(t, filepath.Join(dir, "ls.json"))}, &rows)
	if len(rows) != 1 || len(rows[0].Holders) != 2 || rows[0].Holders[0].Owner != "runner" || tokenArg(rows[0].Holders[0].Token) != lines[0] {
		t.Fatalf("ls inside the command, 1.5s after it started = %+v; want runner's lease (token %s) kept past its 600ms TTL", rows, lines[0])
	}
	// runner's lease was released: only other's is left.
	rows = lsJSON(t, d)
	if len(rows[0].Holders) != 1 || rows[0].Holders[0].Owner != "other" {
		t.Fatalf("after run: holders %+v; want other's alone", rows[0].Holders)
	}

	d.json(0, "acquire", "sem", "--permits", "1", "--owner", "a", "--ttl", "1m")
	r = d.expect(3, "run", "sem", "--permits", "1", "--owner", "b", "--", "true")
	if !strings.Contains(r.stderr, "every permit is taken") {
		t.Fatalf("run --permits 1 on a taken permit: %s", r)
	}
}

// release and renew take any holder's lease by its owner and token, from
// another process than the one that took it; the other holders keep theirs.
func TestReleaseAndRenewOneHolder(t *testing.T) {
	t.Parallel()
	d := newDB(t)
	a := d.json(0, "acquire", "pool", "--permits", "2", "--owner", "a", "--ttl", "1m")
	b := d.json(0, "acquire", "pool", "--permits", "2", "--owner", "b", "--ttl", "1m")

	renewed := d.json(0, "renew", "pool", "--owner", "b", "--token", tokenArg(b.Token), "--ttl", "2m")
	if renewed.Outcome != "renewed" || renewed.Token != b.Token || renewed.TTLMs != 120000 {
		t.Fatalf("renew of b's permit = %+v; want renewed, token %d, ttl 2m", renewed, b.Token)
	}
	released := d.json(0, "release", "pool", "--owner", "a", "--token", tokenArg(a.Token))
	if released.Outcome != "released" || released.Owner != "a" || released.Token != a.Token {
		t.Fatalf("release of a's permit = %+v; want released", released)
	}
	rows := lsJSON(t, d)
	if len(rows) != 1 || len(rows[0].Holders) != 1 || rows[0].Holders[0].Owner != "b" {
		t.Fatalf("after a's release ls = %+v; want b alone holding", rows)
	}
	// The freed permit is taken again; a's token is gone for good.
	d.json(0, "acquire", "pool", "--permits", "2", "--owner", "c")
	stale := d.json(4, "release", "pool", "--owner", "a", "--token", tokenArg(a.Token))
	if stale.Outcome != "not_held" || !strings.Contains(stale.Detail, "none of the running leases of the key's holders") {
		t.Fatalf("release of a released permit = %+v; want not_held, saying so", stale)
	}
	d.expect(4, "renew", "pool", "--owner", "c", "--token", tokenArg(b.Token))
}

// expire and force-release with a holder's token end that holder's lease
// alone; without --token they act on the group's token: every holder.
func TestForceHolders(t *testing.T) {
	t.Parallel()
	d := newDB(t)
	a := d.json(0, "acquire", "reports", "--shared", "--owner", "a", "--ttl", "1m")
	d.json(0, "acquire", "reports", "--shared", "--owner", "b", "--ttl", "1m")
	d.json(0, "acquire", "reports", "--shared", "--owner", "c", "--ttl", "1m")

	r := d.expect(0, "expire", "reports", "--token", tokenArg(a.Token), "--actor", "ops")
	want := "expired reports token=" + tokenArg(a.Token) + " owner=a (by ops; one of its holders: 2 others keep theirs)\n"
	if r.stdout != want {
		t.Fatalf("expire of one holder printed %q; want %q", r.stdout, want)
	}
	rows := lsJSON(t, d)
	if len(rows[0].Holders) != 2 || rows[0].Holders[0].Owner == "a" {
		t.Fatalf("after expiring a: holders %+v; want b and c", rows[0].Holders)
	}
	d.expect(4, "renew", "reports", "--owner", "a", "--token", tokenArg(a.Token))
	group := rows[0].Token

	r = d.expect(0, "force-release", "reports", "--actor", "ops")
	want = "force-released 2 holders of reports (group token " + tokenArg(group) + ", by ops)\n"
	if r.stdout != want {
		t.Fatalf("force-release of every holder printed %q; want %q", r.stdout, want)
	}
	rows = lsJSON(t, d)
	if rows[0].State != "free" || len(rows[0].Holders) != 0 {
		t.Fatalf("after force-release: %+v; want free, no holders", rows[0])
	}
	// Free: the next exclusive acquire has it, above every holder's token.
	next := d.json(0, "acquire", "reports", "--owner", "w")
	if next.Outcome != "acquired" || next.Token <= group {
		t.Fatalf("acquire after force-release = %+v; want acquired above %d", next, group)
	}

	// --json says how many holders' leases it ended.
	d.json(0, "release", "reports", "--owner", "w", "--token", tokenArg(next.Token))
	d.json(0, "acquire", "reports", "--permits", "4", "--owner", "x")
	d.json(0, "acquire", "reports", "--permits", "4", "--owner", "y")
	all := d.json(0, "expire", "reports", "--actor", "ops")
	if all.Outcome != "expired" || all.Owner != "*" || all.HoldersEnded != 2 || all.Actor != "ops" {
		t.Fatalf("expire of every holder --json = %+v; want expired, owner *, holders_ended 2", all)
	}
	d.expect(0, "acquire", "reports", "--owner", "w")

	// The last holder, by its token: the key is free after it.
	last := d.json(0, "acquire", "solo", "--shared", "--owner", "z")
	r = d.expect(0, "force-release", "solo", "--token", tokenArg(last.Token), "--actor", "ops")
	if want := "force-released solo token=" + tokenArg(last.Token) + " owner=z (by ops; the key's last holder)\n"; r.stdout != want {
		t.Fatalf("force-release of the last holder printed %q; want %q", r.stdout, want)
	}
	d.expect(0, "acquire", "solo", "--owner", "w")
}

// run --shared stops its command when its lease is lost, as run of a key
// held alone does, naming who ended it.
func TestRunSharedLosesItsLease(t *testing.T) {
	t.Parallel()
	d := newDB(t)
	dir := t.TempDir()
	p := d.start(append([]string{"run", "reports", "--shared", "--owner", "runner", "--ttl", "3s", "--grace", "20s", "--"},
		script(dir, `trap 'exit 9' TERM; echo "$LOCKCTL_TOKEN" > $DIR/token; mv $DIR/token $DIR/started; while :; do sleep 0.1; done`)...)...)
	p.waitForFile(filepath.Join(dir, "started"))
	d.json(0, "acquire", "reports", "--shared", "--owner", "other", "--ttl", "1m")
	token := strings.TrimSpace(readFile(t, filepath.Join(dir, "started")))
	d.expect(0, "expire", "reports", "--token", token, "--actor", "ops")

	r := p.wait()
	if r.code != 4 || !strings.Contains(r.stderr, "lost the lease on reports (token "+token+")") || !strings.Contains(r.stderr, "force-expired by ops") {
		t.Fatalf("%s\nwant exit 4, the lease loss explained", r)
	}
	rows := lsJSON(t, d)
	if len(rows[0].Holders) != 1 || rows[0].Holders[0].Owner != "other" {
		t.Fatalf("after run lost its lease: holders %+v; want other's alone", rows[0].Holders)
	}
}

// A shared or semaphore key's --owner completes to its holders, --token to
// their tokens (of --owner, when given), and for expire and force-release
// first to the group's token, which acts on every holder.
func TestCompleteHolders(t *testing.T) {
	t.Parallel()
	d := newDB(t)
	a := d.json(0, "acquire", "pool", "--permits", "3", "--owner", "a", "--ttl", "1h")
	b := d.json(0, "acquire", "pool", "--permits", "3", "--owner", "b", "--ttl", "1h")
	group := lsJSON(t, d)[0].Token
	env := cleanEnv("DATABASE_URL="+d.dsn, slowMachine)
	cases := []struct {
		args, want []string
	}{
		{[]string{"release", "pool", "--owner", ""}, []string{"a", "b"}},
		{[]string{"release", "pool", "--owner", "b", "--token", ""}, []string{tokenArg(b.Token)}},
		{[]string{"renew", "pool", "--token", ""}, []string{tokenArg(a.Token), tokenArg(b.Token)}},
		{[]string{"expire", "pool", "--token", ""}, []string{tokenArg(group), tokenArg(a.Token), tokenArg(b.Token)}},
		{[]string{"force-release", "pool", "--token", ""}, []string{tokenArg(group), tokenArg(a.Token), tokenArg(b.Token)}},
	}
	for _, c := range cases {
		if got := completions(t, env, c.args...); !slices.Equal(got, c.want) {
			t.Errorf("__complete %q = %q; want %q", c.args, got, c.want)
		}
	}
	if got := completions(t, env, "acquire", "pool", "--per"); !slices.Equal(got, []string{"--permits"}) {
		t.Errorf("__complete acquire pool --per = %q; want --permits", got)
	}
}
