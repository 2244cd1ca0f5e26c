package protocol_test

import (
	"context"
	"testing"
)

// epochShift is where the epoch starts in a token (docs/protocol.md).
const epochShift = 40

// epochState is the epoch row as a case prepares it, relative to the
// server: its cluster (this one, none yet, or another: a restore) and its
// timeline (the server's plus timelineAhead, or 0 for none yet).
type epochState struct {
	cluster       string // "this", "none", "other"
	noTimeline    bool
	timelineAhead int64
	base          int64
}

// server is the cluster's system identifier and the WAL timeline it writes.
type server struct{ sysid, timeline int64 }

const (
	serverSQL = `SELECT (SELECT system_identifier FROM pg_control_system()),
		('x' || substr(pg_walfile_name(pg_current_wal_lsn()), 1, 8))::bit(32)::bigint`
	setEpochSQL = `UPDATE distributed_lock_epoch SET system_id = $1, timeline = $2, base = $3`
	// The sequence as the row says: a few tokens into its epoch (with no
	// timeline yet, a few tokens into a database from before the epoch).
	setSequenceSQL = `SELECT setval('distributed_lock_fence_seq',
		CASE WHEN $1::bigint = 0 THEN 5 ELSE (($1::bigint + $2::bigint) << 40) + 5 END)`
	readEpochSQL = `SELECT system_id, timeline, base FROM distributed_lock_epoch`
)

// prepareEpoch writes the epoch row of f's schema and returns the server.
func prepareEpoch(t *testing.T, f *fixture, e epochState) server {
	t.Helper()
	ctx := context.Background()
	var s server
	if err := f.db.QueryRow(ctx, serverSQL).Scan(&s.sysid, &s.timeline); err != nil {
		t.Fatal(err)
	}
	sysid := map[string]any{"this": s.sysid, "none": nil, "other": s.sysid + 1}[e.cluster]
	timeline := s.timeline + e.timelineAhead
	if e.noTimeline {
		timeline = 0
	}
	if _, err := f.db.Exec(ctx, setEpochSQL, sysid, timeline, e.base); err != nil {
		t.Fatalf("prepare the epoch row: %v", err)
	}
	if _, err := f.db.Exec(ctx, setSequenceSQL, timeline, e.base); err != nil {
		t.Fatalf("prepare the token sequence: %v", err)
	}
	return s
}

// epochCases are the epoch row's states that matter, with the epoch each
// must give: a function of the server's timeline, and whether the row and
// sequence must move.
var epochCases = []struct {
	name  string
	state epochState
	epoch func(timeline int64) int64
	base  func(timeline int64) int64 // the row's base after
	moves bool
}{
	{"current", epochState{cluster: "this"}, func(tl int64) int64 { return tl }, func(int64) int64 { return 0 }, false},
	{"current, with a base", epochState{cluster: "this", base: 3}, func(tl int64) int64 { return tl + 3 }, func(int64) int64 { return 3 }, false},
	{"a new database", epochState{cluster: "none", noTimeline: true}, func(tl int64) int64 { return tl }, func(int64) int64 { return 0 }, true},
	{"a promotion: a higher timeline", epochState{cluster: "this", noTimeline: true, base: 2}, func(tl int64) int64 { return tl + 2 }, func(int64) int64 { return 2 }, true},
	{"restored into another cluster", epochState{cluster: "other"}, func(tl int64) int64 { return 2 * tl }, func(tl int64) int64 { return tl }, true},
	{"a lower timeline than the row's", epochState{cluster: "this", timelineAhead: 1}, func(tl int64) int64 { return 2*tl + 1 }, func(tl int64) int64 { return tl + 1 }, true},
}

// checkEpoch: the row names this cluster and timeline with the base
// wanted, and the sequence is in the epoch: moved there if it had to be,
// else left alone.
func checkEpoch(t *testing.T, f *fixture, s server, epoch, base, before int64, moves bool) {
	t.Helper()
	var sysid, timeline, gotBase int64
	if err := f.db.QueryRow(context.Background(), readEpochSQL).Scan(&sysid, &timeline, &gotBase); err != nil {
		t.Fatal(err)
	}
	if sysid != s.sysid || timeline != s.timeline || gotBase != base {
		t.Errorf("epoch row (%d, %d, %d); want (%d, %d, %d)", sysid, timeline, gotBase, s.sysid, s.timeline, base)
	}
	last := lastToken(t, f.db)
	if moves && last+1 < epoch<<epochShift {
		t.Errorf("the sequence's next token %d is below epoch %d's first, %d", last+1, epoch, epoch<<epochShift)
	}
	if !moves && last != before {
		t.Errorf("the sequence moved from %d to %d; want it left alone", before, last)
	}
}

// The epoch is the schema's, so the cases take turns on a schema of their
// own, each preparing the epoch row and the sequence afresh.
func TestAdvanceEpoch(t *testing.T) {
	t.Parallel()
	f := newIsolatedFixture(t, "distributed_lock_advance_epoch")
	for _, c := range epochCases {
		t.Run(c.name, func(t *testing.T) {
			s := prepareEpoch(t, f, c.state)
			before := lastToken(t, f.db)
			var epoch int64
			if err := f.db.QueryRow(context.Background(), `SELECT distributed_lock_advance_epoch()`).Scan(&epoch); err != nil {
				t.Fatal(err)
			}
			if want := c.epoch(s.timeline); epoch != want {
				t.Errorf("epoch %d; want %d (timeline %d)", epoch, want, s.timeline)
			}
			checkEpoch(t, f, s, epoch, c.base(s.timeline), before, c.moves)
		})
	}
}
