package tui

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/lockctl/lockctl/internal/testdb"
	"github.com/lockctl/lockctl/locker"
)

// A key released before its hold's at-least point reads as kept on a real
// server: the table and the detail say until when, and u offers to end the
// hold, named as such.
func TestKeptKeyIsShownAndMayBeEnded(t *testing.T) {
	pool := testdb.New(t)
	lk := testdb.Locker(t, locker.Config{TTL: time.Minute})
	ctx := context.Background()
	lease, err := testdb.One(lk.Acquire(ctx, pool, locker.Request{Keys: locker.Keys("reports:nightly"), Owner: "cron-1", AtLeast: 5 * time.Minute}))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := lk.Release(ctx, pool, lease); err != nil {
		t.Fatal(err)
	}
	m := dbModel(t, pool, Options{}, 120, 35)
	if s := screen(m); !strings.Contains(s, "kept (at least)") {
		t.Fatalf("table does not show the key kept:\n%s", s)
	}
	if s := screen(press(t, m, "enter")); !strings.Contains(s, "its hold's at-least point") || !strings.Contains(s, "at least     5m") {
		t.Fatalf("detail does not say until when it is kept:\n%s", s)
	}
	if s := screen(press(t, m, "u")); !strings.Contains(s, "End the at-least hold of this lock?") {
		t.Fatalf("u on a kept key asks nothing:\n%s", s)
	}
}
