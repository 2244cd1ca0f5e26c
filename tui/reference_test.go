package tui

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/lockctl/lockctl/internal/testdb"
	"github.com/lockctl/lockctl/store"
)

// On the reference service's table the console shows its locks, says it
// is not migrated, and offers no action; once the table is migrated, the
// next poll reads it as lockctl's and the actions come back.
func TestReferenceTableIsShownReadOnlyUntilMigrated(t *testing.T) {
	pool, _ := testdb.ReferencePool(t)
	now := testdb.DBNow(t, pool)
	testdb.InsertReference(t, pool, time.UTC,
		testdb.ReferenceLock{Key: "orders:1", Owner: "app-1:thread-7", Token: 1764700000500, ExpiresAt: now.Add(time.Hour)},
		testdb.ReferenceLock{Key: "report:nightly", Owner: "app-1:thread-9", Token: 1764700000100, ExpiresAt: now.Add(-time.Minute)})
	m := dbModel(t, pool, Options{}, 120, 35)
	if m.lastErr != nil {
		t.Fatalf("poll of the reference table failed: %v", m.lastErr)
	}
	s := screen(m)
	for _, want := range []string{"orders:1", "app-1:thread-7", "1764700000500", "report:nightly", "expired",
		"not migrated: run lockctl migrate to adopt — read-only", "locks 2", "● live"} {
		if !strings.Contains(s, want) {
			t.Errorf("screen lacks %q:\n%s", want, s)
		}
	}
	for _, line := range strings.Split(s, "\n") {
		if strings.Contains(line, "orders:1") && strings.Contains(line, "░") {
			t.Errorf("a TTL bar drawn for a lock whose TTL the table does not record:\n%s", s)
		}
	}
	for _, k := range []string{"x", "d", "r", "a"} {
		if m2, cmd := update(t, m, keyMsg(k)); cmd != nil || m2.confirm != nil || m2.form != nil {
			t.Fatalf("%s acted on the reference table", k)
		}
	}
	if s := screen(press(t, m, "?")); strings.Contains(s, "force-expire") || strings.Contains(s, "acquire a lock") ||
		!strings.Contains(s, "reference service's table, not migrated") {
		t.Fatalf("help offers actions on the reference table:\n%s", s)
	}
	m, cmd := update(t, m, keyMsg("enter"))
	m = runPoll(t, m, cmd)
	if s := screen(m); m.lastErr != nil || !strings.Contains(s, "Lock orders:1") || !strings.Contains(s, "records only these") ||
		strings.Contains(s, "acquired at") || strings.Contains(s, "TTL ") {
		t.Fatalf("detail on the reference table (%v):\n%s", m.lastErr, s)
	}
	m = press(t, m, "esc")

	if _, err := store.MigrateWith(context.Background(), pool, store.MigrateOptions{AdoptReference: true}); err != nil {
		t.Fatal(err)
	}
	m = repoll(t, m)
	if s := screen(m); m.lastErr != nil || strings.Contains(s, "not migrated") || !strings.Contains(s, "orders:1") {
		t.Fatalf("after migrate (%v):\n%s", m.lastErr, s)
	}
	if m2 := press(t, m, "x"); m2.confirm == nil {
		t.Fatal("force-expire not offered once the table is migrated")
	}
	if m.pollRequest().Shape {
		t.Error("polls of the migrated table still check its shape first")
	}
}
