package cli_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lockctl/lockctl/internal/testdb"
)

// referenceLsRow is one element of `ls --json` on the reference service's table.
type referenceLsRow struct {
	Key         string    `json:"key"`
	Owner       string    `json:"owner"`
	Token       int64     `json:"token"`
	ExpiresAt   time.Time `json:"expires_at"`
	State       string    `json:"state"`
	RemainingMs int64     `json:"remaining_ms"`
}

// An operator with the reference service's table: ls shows its locks
// before anything is migrated, writes are refused without a change, and
// migrate adopts it with every lease intact, so its holders renew and
// release with their tokens and new tokens start above the old ones.
func TestLsAndMigrateOnTheReferenceTable(t *testing.T) {
	t.Parallel()
	pool, dsn := testdb.ReferencePool(t)
	now := testdb.DBNow(t, pool)
	at := func(d time.Duration) time.Time { return now.Add(d).Truncate(time.Microsecond) }
	seoul := time.FixedZone("Asia/Seoul", 9*3600)
	reference := []testdb.ReferenceLock{
		{Key: "orders:1", Owner: "app-1:thread-7", Token: now.UnixMilli() - 3000, ExpiresAt: at(25 * time.Second)},
		{Key: "orders:2", Owner: "app-2:thread-3", Token: now.UnixMilli() - 1000, ExpiresAt: at(10 * time.Minute)},
		{Key: "report:nightly", Owner: "app-1:thread-9", Token: now.UnixMilli() - 90000, ExpiresAt: at(-time.Minute)},
	}
	testdb.InsertReference(t, pool, seoul, reference...)
	// ls reads local times in the session's zone: here the JVM's, through
	// the connection string.
	ls := db{t: t, dsn: testdb.WithParam(dsn, "timezone", "Asia/Seoul")}
	d := db{t: t, dsn: dsn}

	r := ls.expect(0, "ls", "--json")
	var before []referenceLsRow
	decode(t, r, &before)
	if !strings.Contains(r.stderr, "not migrated") || !strings.Contains(r.stderr, "lockctl migrate") {
		t.Errorf("ls on the reference table does not say it is unmigrated:\n%s", r)
	}
	if len(before) != len(reference) {
		t.Fatalf("ls --json = %+v; want %d rows", before, len(reference))
	}
	for i, s := range reference {
		got := before[i]
		wantState, maxLeft := "held", s.ExpiresAt.Sub(now).Milliseconds()
		if maxLeft < 0 {
			wantState = "expired"
		}
		if got.Key != s.Key || got.Owner != s.Owner || got.Token != s.Token || !got.ExpiresAt.Equal(s.ExpiresAt) ||
			got.State != wantState || got.RemainingMs > maxLeft || got.RemainingMs < maxLeft-20000 {
			t.Errorf("ls row %d = %+v; want %s by %s, token %d, expiring %s (%s, at most %dms left)",
				i, got, s.Key, s.Owner, s.Token, s.ExpiresAt.UTC(), wantState, maxLeft)
		}
	}
	if r := ls.expect(0, "ls"); !strings.Contains(r.stdout, "app-2:thread-3") || !strings.Contains(r.stdout, "expired") {
		t.Errorf("ls on the reference table:\n%s", r)
	}
	var filtered []referenceLsRow
	decode(t, ls.expect(0, "ls", "--prefix", "orders:", "--state", "expired,held", "--json"), &filtered)
	if len(filtered) != 2 || filtered[0].Key != "orders:1" || filtered[1].Key != "orders:2" {
		t.Errorf("ls --prefix orders: on the reference table = %+v; want orders:1 and orders:2", filtered)
	}
	decode(t, ls.expect(0, "ls", "--state", "expired", "--json"), &filtered)
	if len(filtered) != 1 || filtered[0].Key != "report:nightly" {
		t.Errorf("ls --state expired on the reference table = %+v; want report:nightly", filtered)
	}

	// Writes before migrate: refused, naming the fix.
	if r := d.expect(1, "acquire", "orders:1", "--owner", "lockctl-1"); !strings.Contains(r.stderr, "lockctl migrate") {
		t.Errorf("acquire on the reference table:\n%s", r)
	}
	if r := d.expect(2, "migrate", "--reference-time-zone", "Mars/Olympus_Mons"); !strings.Contains(r.stderr, "Mars/Olympus_Mons") {
		t.Errorf("migrate with an unknown zone:\n%s", r)
	}
	var unchanged []referenceLsRow
	decode(t, ls.expect(0, "ls", "--json"), &unchanged)
	if !slices.EqualFunc(before, unchanged, func(a, b referenceLsRow) bool {
		return a.Key == b.Key && a.Owner == b.Owner && a.Token == b.Token && a.ExpiresAt.Equal(b.ExpiresAt)
	}) {
		t.Fatalf("refused commands changed the table: %+v, then %+v", before, unchanged)
	}

	r = d.expect(0, "migrate", "--reference-time-zone", "Asia/Seoul")
	if !strings.Contains(r.stdout, "3 locks kept (2 held)") || !strings.Contains(r.stdout, "Asia/Seoul") {
		t.Errorf("migrate of the reference table:\n%s", r)
	}
	after := lsJSON(t, d)
	for i, s := range reference {
		if got := after[i]; got.Key != s.Key || got.Owner != s.Owner || got.Token != s.Token || !got.ExpiresAt.Equal(s.ExpiresAt) {
			t.Errorf("after migrate, row %d = %+v; want %s by %s, token %d, expiring %s", i, got, s.Key, s.Owner, s.Token, s.ExpiresAt.UTC())
		}
	}
	renewed := d.json(0, "renew", "orders:2", "--owner", reference[1].Owner, "--token", tokenArg(reference[1].Token), "--ttl", "1h")
	if renewed.Token != reference[1].Token {
		t.Errorf("renew of an adopted lease kept token %d; want %d", renewed.Token, reference[1].Token)
	}
	d.json(0, "release", "orders:2", "--owner", reference[1].Owner, "--token", tokenArg(reference[1].Token))
	for _, key := range []string{"orders:2", "report:nightly", "new"} {
		if g := d.json(0, "acquire", key, "--owner", "lockctl-1"); g.Token <= reference[1].Token {
			t.Errorf("acquire %s after migrate: token %d; want above the largest old token %d", key, g.Token, reference[1].Token)
		}
	}
	if r := d.expect(0, "migrate"); strings.Contains(r.stdout, "adopted") {
		t.Errorf("a second migrate adopted again:\n%s", r)
	}
}

// A reference row lockctl cannot hold makes migrate refuse and say which.
func TestMigrateNamesTheReferenceRowsItRefuses(t *testing.T) {
	t.Parallel()
	pool, dsn := testdb.ReferencePool(t)
	testdb.InsertReference(t, pool, time.UTC,
		testdb.ReferenceLock{Key: "fine", Owner: "app-1", Token: 1, ExpiresAt: time.Now().Add(time.Hour)},
		testdb.ReferenceLock{Key: "ownerless", Owner: "", Token: 2, ExpiresAt: time.Now().Add(time.Hour)})
	d := db{t: t, dsn: dsn}
	r := d.expect(1, "migrate")
	for _, want := range []string{"cannot be adopted", `"ownerless": owner_id is empty`, "Nothing was changed"} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("refused migrate does not say %q:\n%s", want, r)
		}
	}
	if r := d.expect(0, "ls"); !strings.Contains(r.stdout, "ownerless") {
		t.Errorf("ls after a refused migrate:\n%s", r)
	}
}
