package lockview_test

import (
	"context"
	"testing"
	"time"

	"github.com/lockctl/lockctl/internal/lockview"
	"github.com/lockctl/lockctl/internal/testdb"
	"github.com/lockctl/lockctl/store"
)

// logEvent writes one event as the protocol would, age before the
// database's now.
func logEvent(t *testing.T, db store.DBTX, age time.Duration, key, kind string, token int64, detail string) {
	t.Helper()
	if _, err := db.Exec(context.Background(), `INSERT INTO distributed_lock_event (occurred_at, lock_key, kind, owner_id, fence_token, actor, detail)
		VALUES (clock_timestamp() - $1::bigint * interval '1 microsecond', $2, $3, 'o', $4, 'a', $5::jsonb)`,
		age.Microseconds(), key, kind, token, detail); err != nil {
		t.Fatal(err)
	}
}

// Each measured event says what it measures: a grant its wait (none at
// the first try), a give-up its wait, an ending event the hold since its
// own lease's grant, found among other holders' grants and not mistaken
// for another lease's; events of other kinds are not read.
func TestReadMeasures(t *testing.T) {
	pool := testdb.New(t)
	ctx := context.Background()
	ago := func(n float64) time.Duration { return time.Duration(n * float64(time.Minute)) }
	logEvent(t, pool, ago(60), "a", "acquired", 10, `{}`)                 // granted at once
	logEvent(t, pool, ago(59), "a", "released", 10, `{}`)                 // held 1m
	logEvent(t, pool, ago(58), "b", "stolen", 20, `{"waited_ms": 1500}`)  // a hand-off after 1.5s
	logEvent(t, pool, ago(57), "b", "stale_write_rejected", 9, `{}`)      // not measured
	logEvent(t, pool, ago(56), "b", "gave_up", 0, `{"waited_ms": 90000}`) // gave up after 90s
	logEvent(t, pool, ago(55), "s", "acquired", 30, `{"slot": 1}`)        // two holders of a shared key
	logEvent(t, pool, ago(54), "s", "acquired", 31, `{"slot": 2}`)
	logEvent(t, pool, ago(50), "s", "released", 30, `{}`)                    // the first: held 5m
	logEvent(t, pool, ago(49), "b", "force_released", 20, `{}`)              // held 9m
	logEvent(t, pool, ago(48), "c", "acquired", 40, `{}`)                    // a lease whose end...
	logEvent(t, pool, ago(47), "c", "force_expired", 41, `{}`)               // ...is of another, unlogged grant
	logEvent(t, pool, ago(46), "d", "acquired", 50, `{"waited_ms": "soon"}`) // a caller's detail: no wait read
	logEvent(t, pool, ago(45), "d", "acquired", 51, `{"waited_ms": 1e40}`)   // bounded
	logEvent(t, pool, 0, "a", "acquired", 60, `{}`)                          // not settled yet

	ms, through, more, err := lockview.ReadMeasures(ctx, pool, 0, 10*time.Second, 100)
	if err != nil {
		t.Fatal(err)
	}
	type seen struct {
		key, kind  string
		wait, hold time.Duration // -1: none
		handoff    bool
	}
	none := time.Duration(-1)
	want := []seen{
		{"a", "acquired", 0, none, false},
		{"a", "released", none, time.Minute, false},
		{"b", "stolen", 1500 * time.Millisecond, none, true},
		{"b", "gave_up", 90 * time.Second, none, false},
		{"s", "acquired", 0, none, false},
		{"s", "acquired", 0, none, false},
		{"s", "released", none, 5 * time.Minute, false},
		{"b", "force_released", none, 9 * time.Minute, false},
		{"c", "acquired", 0, none, false},
		{"c", "force_expired", none, none, false},
		{"d", "acquired", 0, none, false},
		{"d", "acquired", 365 * 24 * time.Hour, none, true},
	}
	if len(ms) != len(want) {
		t.Fatalf("%d measures %+v; want %d", len(ms), ms, len(want))
	}
	for i, w := range want {
		m := ms[i]
		got := seen{m.Key, m.Kind, none, none, m.Handoff}
		if m.Waited {
			got.wait = m.Wait
		}
		if m.Held {
			got.hold = m.Hold.Round(time.Second)
		}
		if got != w {
			t.Errorf("measure %d: %+v; want %+v", i, got, w)
		}
	}
	if through != ms[len(ms)-1].ID || more {
		t.Errorf("through %d, more %v; want the last measure's id %d, no more", through, more, ms[len(ms)-1].ID)
	}

	// A release read without its grant (a batch that starts after it)
	// finds the grant in the key's history.
	if alone, _, _, err := lockview.ReadMeasures(ctx, pool, ms[0].ID, 10*time.Second, 1); err != nil ||
		len(alone) != 1 || alone[0].Kind != "released" || !alone[0].Held || alone[0].Hold.Round(time.Second) != time.Minute {
		t.Errorf("a's release read alone: %+v, %v; want its hold of 1m", alone, err)
	}

	// Read on from there: the unsettled grant once it has settled, and
	// a batch cut at the limit says there is more.
	again, through2, _, err := lockview.ReadMeasures(ctx, pool, through, 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	if len(again) != 1 || again[0].Key != "a" || again[0].Kind != "acquired" || through2 <= through {
		t.Errorf("read on: %+v through %d; want the one new grant of a", again, through2)
	}
	if part, _, more, err := lockview.ReadMeasures(ctx, pool, 0, 0, 5); err != nil || len(part) != 5 || !more {
		t.Errorf("a batch of 5: %d measures, more %v, %v; want 5 and more", len(part), more, err)
	}
}

// A reader of a span starts before its first event, found by time.
func TestFirstEventSince(t *testing.T) {
	pool := testdb.New(t)
	ctx := context.Background()
	if id, err := lockview.FirstEventSince(ctx, pool, time.Hour); err != nil || id != 0 {
		t.Fatalf("empty log: %d, %v; want 0", id, err)
	}
	logEvent(t, pool, 2*time.Hour, "k", "acquired", 1, `{}`)
	logEvent(t, pool, 3*time.Minute, "k", "released", 1, `{}`)
	logEvent(t, pool, time.Minute, "k", "acquired", 2, `{}`)
	ms, _, _, err := lockview.ReadMeasures(ctx, pool, 0, 0, 10)
	if err != nil {
		t.Fatal(err)
	}
	if id, err := lockview.FirstEventSince(ctx, pool, 15*time.Minute); err != nil || id != ms[0].ID {
		t.Errorf("the last 15m start after %d (%v); want after the old grant, %d", id, err, ms[0].ID)
	}
	if id, err := lockview.FirstEventSince(ctx, pool, 30*time.Second); err != nil || id != ms[2].ID {
		t.Errorf("the last 30s start after %d (%v); want after the newest event, %d", id, err, ms[2].ID)
	}
	if id, err := lockview.LastEventID(ctx, pool); err != nil || id != ms[2].ID {
		t.Errorf("last event %d (%v); want %d", id, err, ms[2].ID)
	}
}
