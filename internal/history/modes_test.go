package history

import (
	"strings"
	"testing"
	"time"

	"github.com/lockctl/lockctl/internal/lockview"
)

func sharedOp(op Op) Op { op.Mode = ModeShared; return op }

func permitOp(n int, op Op) Op { op.Mode, op.Permits = ModeSemaphore, n; return op }

func sharedEv(e lockview.Event) lockview.Event {
	e.Detail = map[string]any{"mode": "shared"}
	return e
}

// permitEv is a permit's grant event, its detail as pgx reads jsonb: the
// number a float64.
func permitEv(n int, e lockview.Event) lockview.Event {
	e.Detail = map[string]any{"mode": "semaphore", "permits": float64(n)}
	return e
}

func stolenFrom(prev int64, e lockview.Event) lockview.Event {
	e.PreviousToken = &prev
	return e
}

func release(client int, key, owner string, token int64, at time.Duration) Op {
	return Op{Client: client, Kind: Release, Key: key, Owner: owner, Token: token, Result: OK, Call: at - ms, Return: at + ms}
}

// modes: "pool" is a semaphore of 3 permits, "doc" a key readers share and
// a writer takes alone. On pool, a, b and c take the three permits at once
// (tokens 1, 3 and 2: permits that overlap draw their tokens in any
// order); a releases its permit and d takes it (token 5); c's lease lapses
// at 106ms and e steals its permit (token 8) while b's has lapsed too and
// d's runs. On doc, readers r1 (token 16) and r2 (token 14, asked for
// after r1's grant returned) overlap; both release; w takes doc alone
// (token 19) and releases it; reader r3 takes it again (token 20), and
// when its lease lapses x steals doc (token 21). Holders write under their
// leases: r1's write sees r2's later grant and commits before r2's (older
// token, fellow reader), b's and c's see d's grant, and e writes after its
// steal.
func modes() ([]Op, Observed) {
	ops := []Op{
		permitOp(3, grant(1, "pool", "a", 1, "acquired", 0, 5*ms, 104*ms)),
		permitOp(3, grant(2, "pool", "b", 3, "acquired", 0, 6*ms, 105*ms)),
		permitOp(3, grant(3, "pool", "c", 2, "acquired", 0, 7*ms, 106*ms)),
		release(1, "pool", "a", 1, 20*ms),
		permitOp(3, grant(4, "pool", "d", 5, "acquired", 24*ms, 26*ms, 125*ms)),
		permitOp(3, grant(5, "pool", "e", 8, "stolen", 110*ms, 112*ms, 211*ms)),
		sharedOp(grant(6, "doc", "r1", 16, "acquired", 0, 5*ms, 104*ms)),
		sharedOp(grant(7, "doc", "r2", 14, "acquired", 6*ms, 8*ms, 107*ms)),
		release(6, "doc", "r1", 16, 30*ms),
		release(7, "doc", "r2", 14, 40*ms),
		grant(8, "doc", "w", 19, "acquired", 49*ms, 51*ms, 150*ms),
		release(8, "doc", "w", 19, 60*ms),
		sharedOp(grant(9, "doc", "r3", 20, "acquired", 69*ms, 71*ms, 170*ms)),
		grant(10, "doc", "x", 21, "stolen", 179*ms, 181*ms, 280*ms),
		write(6, "doc", "r1", 16, 1, 10*ms),
		write(7, "doc", "r2", 14, 1, 12*ms),
		write(8, "doc", "w", 19, 1, 55*ms),
		write(2, "pool", "b", 3, 1, 30*ms),
		write(3, "pool", "c", 2, 1, 32*ms),
		write(5, "pool", "e", 8, 1, 115*ms),
	}
	obs := Observed{
		Events: []lockview.Event{
			permitEv(3, ev(1, "pool", "acquired", "a", 1, 4*ms)),
			permitEv(3, ev(2, "pool", "acquired", "b", 3, 5*ms)),
			permitEv(3, ev(3, "pool", "acquired", "c", 2, 6*ms)),
			sharedEv(ev(4, "doc", "acquired", "r1", 16, 4*ms)),
			sharedEv(ev(5, "doc", "acquired", "r2", 14, 7*ms)),
			ev(6, "pool", "released", "a", 1, 20*ms),
			permitEv(3, ev(7, "pool", "acquired", "d", 5, 25*ms)),
			ev(8, "doc", "released", "r1", 16, 30*ms),
			ev(9, "doc", "released", "r2", 14, 40*ms),
			ev(10, "doc", "acquired", "w", 19, 50*ms),
			ev(11, "doc", "released", "w", 19, 60*ms),
			sharedEv(ev(12, "doc", "acquired", "r3", 20, 70*ms)),
			permitEv(3, stolenFrom(2, ev(13, "pool", "stolen", "e", 8, 111*ms))),
			stolenFrom(20, ev(14, "doc", "stolen", "x", 21, 180*ms)),
		},
		Writes: []GuardedWrite{
			{Key: "doc", Token: 16, Writer: "r1", WriterSeq: 1, CommitSeq: 1},
			{Key: "doc", Token: 14, Writer: "r2", WriterSeq: 1, CommitSeq: 2},
			{Key: "doc", Token: 19, Writer: "w", WriterSeq: 1, CommitSeq: 3},
			{Key: "pool", Token: 3, Writer: "b", WriterSeq: 1, CommitSeq: 1},
			{Key: "pool", Token: 2, Writer: "c", WriterSeq: 1, CommitSeq: 2},
			{Key: "pool", Token: 8, Writer: "e", WriterSeq: 1, CommitSeq: 3},
		},
		SeenToken: []int64{14, 14, 19, 5, 5, 8},
	}
	return ops, obs
}

func write(client int, key, owner string, token, seq int64, at time.Duration) Op {
	return Op{Client: client, Kind: Write, Key: key, Owner: owner, Token: token, WriterSeq: seq, Result: OK, Call: at, Return: at + ms}
}

func TestModesHistoryPasses(t *testing.T) {
	ops, obs := modes()
	r := Check(ops, nil, nil, obs)
	if !r.OK() {
		t.Fatalf("violations in a correct history: %q", r.Violations)
	}
	if st := r.Stats; st.Grants != 10 || st.SharedGrants != 3 || st.PermitGrants != 5 || st.ExclusiveAfterHolders != 2 ||
		st.Steals != 2 || st.Releases != 4 || st.FencedWrites != 6 || st.WritesSeen != 6 {
		t.Fatalf("stats = %+v", st)
	}
	// An exclusive steal takes the key over from every reader: its event
	// need not name one.
	obs.Events[13].PreviousToken = nil
	if r := Check(ops, nil, nil, obs); !r.OK() {
		t.Fatalf("an exclusive steal naming no reader: %q", r.Violations)
	}
}

// dropOps removes the ops at the given indices (ascending) of modes().
func dropOps(ops []Op, at ...int) []Op {
	for i := len(at) - 1; i >= 0; i-- {
		ops = append(ops[:at[i]:at[i]], ops[at[i]+1:]...)
	}
	return ops
}

// dropEvents removes the events with the given ids.
func dropEvents(obs *Observed, ids ...int64) {
	var kept []lockview.Event
	for _, e := range obs.Events {
		drop := false
		for _, id := range ids {
			drop = drop || e.ID == id
		}
		if !drop {
			kept = append(kept, e)
		}
	}
	obs.Events = kept
}

func TestCheckerFlagsModes(t *testing.T) {
	cases := []struct {
		name   string
		mutate func(ops []Op, obs *Observed) []Op
		want   string
	}{
		{"four permits of a semaphore of three", func(ops []Op, obs *Observed) []Op {
			dropEvents(obs, 6) // a keeps its permit when d takes one
			return dropOps(ops, 3)
		}, `more than 3 holders of semaphore "pool": event 7 granted token 5 to "d" at 2026-06-01T12:00:00.025Z, while 3 permits were valid (tokens 1 of "a" until 2026-06-01T12:00:00.104Z, 2 of "c" until 2026-06-01T12:00:00.106Z, 3 of "b" until 2026-06-01T12:00:00.105Z)`},
		{"a permit granted with fewer permits than its holders'", func(ops []Op, obs *Observed) []Op {
			obs.Events[6] = permitEv(2, obs.Events[6])
			ops[4].Permits = 2
			return ops
		}, `more than 2 holders of semaphore "pool": event 7 granted token 5 to "d"`},
		{"a writer beside a reader", func(ops []Op, obs *Observed) []Op {
			dropEvents(obs, 9) // r2 still reads when w takes doc
			return dropOps(ops, 9)
		}, `overlapping leases on "doc": event 10 granted token 19 (exclusive) to "w" at 2026-06-01T12:00:00.05Z, but token 14 (shared) of "r2" was valid until 2026-06-01T12:00:00.107Z (57ms later)`},
		{"a reader beside the writer", func(ops []Op, obs *Observed) []Op {
			dropEvents(obs, 11) // w still writes when r3 takes doc
			return dropOps(ops, 11)
		}, `overlapping leases on "doc": event 12 granted token 20 (shared) to "r3" at 2026-06-01T12:00:00.07Z, but token 19 (exclusive) of "w" was valid until 2026-06-01T12:00:00.15Z (80ms later)`},
		{"a reader beside permits: a key has one mode at a time", func(ops []Op, obs *Observed) []Op {
			obs.Events[6] = sharedEv(obs.Events[6])
			ops[4] = sharedOp(ops[4])
			return ops
		}, `overlapping leases on "pool": event 7 granted token 5 (shared) to "d" at 2026-06-01T12:00:00.025Z, but token 2 (semaphore of 3 permits) of "c" was valid until`},
		{"a writer's token below a reader's before it", func(ops []Op, obs *Observed) []Op {
			*obs.Events[9].Token, *obs.Events[10].Token = 15, 15
			ops[10].Token, ops[11].Token = 15, 15
			return ops
		}, `token went backwards on "doc": event 10 granted 15 to "w" after a grant of 16`},
		{"a writer stealing from a reader whose lease ran", func(ops []Op, obs *Observed) []Op {
			obs.Events[13].OccurredAt = t0.Add(150 * ms)
			ops[13].Call, ops[13].Return = 149*ms, 151*ms
			return ops
		}, `overlapping leases on "doc": event 14 granted token 21 (exclusive) to "x" at 2026-06-01T12:00:00.15Z, but token 20 (shared) of "r3" was valid until 2026-06-01T12:00:00.17Z (20ms later)`},
		{"a writer's steal reply before the reader's lease could have ended", func(ops []Op, obs *Observed) []Op {
			ops[13].Return = 160 * ms
			return ops
		}, `client 10 stole "doc" (token 21) 160ms after the start, but token 20, renewed by a call sent at 69ms with TTL 100ms, lasted at least until 169ms`},
		{"a reader's token below the writer's before it", func(ops []Op, obs *Observed) []Op {
			*obs.Events[11].Token = 18
			ops[12].Token = 18
			return ops
		}, `token went backwards on "doc": event 12 granted 18 (shared) to "r3" after an exclusive grant of 19`},
		{"a permit stolen while it ran", func(ops []Op, obs *Observed) []Op {
			*obs.Events[12].PreviousToken = 5
			return ops
		}, `overlapping leases on "pool": event 13 granted token 8 (semaphore of 3 permits) to "e" at 2026-06-01T12:00:00.111Z, but token 5 (semaphore of 3 permits) of "d" was valid until 2026-06-01T12:00:00.125Z (14ms later)`},
		{"a permit stolen from a released one", func(ops []Op, obs *Observed) []Op {
			*obs.Events[12].PreviousToken = 1
			return ops
		}, `event 13: "pool" stolen with token 8 from token 1, which was no unreleased lease of the key`},
		{"a permit stolen from nobody named", func(ops []Op, obs *Observed) []Op {
			obs.Events[12].PreviousToken = nil
			return ops
		}, `event 13: "pool" stolen with token 8 (semaphore of 3 permits), but the event names no previous token`},
		{"a release of a permit taken over", func(ops []Op, obs *Observed) []Op {
			obs.Events = append(obs.Events, ev(14, "pool", "released", "c", 2, 120*ms))
			return append(ops, Op{Client: 3, Kind: Release, Key: "pool", Owner: "c", Token: 2, Result: OK, Call: 119 * ms, Return: 121 * ms})
		}, `event 14: released of token 2 on "pool", which is not the key's current grant`},
		{"a reader's write after the writer's grant", func(ops []Op, obs *Observed) []Op {
			obs.SeenToken[0] = 19
			return ops
		}, `stale write on "doc": "r1" wrote with token 16 while grant 19 was already committed`},
		{"a reader's write committed after the writer's", func(ops []Op, obs *Observed) []Op {
			obs.Writes = append(obs.Writes, GuardedWrite{Key: "doc", Token: 14, Writer: "r2", WriterSeq: 2, CommitSeq: 4})
			obs.SeenToken = append(obs.SeenToken, 14)
			return append(ops, write(7, "doc", "r2", 14, 2, 56*ms))
		}, `stale write on "doc": "r2" wrote with token 14 (commit #4) after "w" wrote with token 19 (commit #3)`},
		{"a permit's write after its permit was stolen", func(ops []Op, obs *Observed) []Op {
			obs.SeenToken[4] = 8
			return ops
		}, `stale write on "pool": "c" wrote with token 2 while grant 8 was already committed`},
		{"a released permit's write after a grant that filled the semaphore", func(ops []Op, obs *Observed) []Op {
			obs.Writes = append(obs.Writes, GuardedWrite{Key: "pool", Token: 1, Writer: "a", WriterSeq: 1, CommitSeq: 4})
			obs.SeenToken = append(obs.SeenToken, 5)
			return append(ops, write(1, "pool", "a", 1, 1, 27*ms))
		}, `stale write on "pool": "a" wrote with token 1 while grant 5 was already committed`},
		{"a permit's write before its grant", func(ops []Op, obs *Observed) []Op {
			obs.SeenToken[3] = 1
			return ops
		}, `write #1 on "pool" by "b" with token 3 was made before its grant was committed (latest grant seen: 1)`},
		{"a reader asked for after the writer's grant returned, with a smaller token", func(ops []Op, obs *Observed) []Op {
			ops[6].Call, ops[6].Return = 52*ms, 53*ms
			return ops
		}, `real-time order on "doc": token 19 (client 8, returned at 51ms) came before token 16 (client 6, sent at 52ms) was asked for`},
		{"a reader told it holds the key alone", func(ops []Op, obs *Observed) []Op {
			ops[6].Mode = ""
			return ops
		}, `client 6 was granted "doc" token 16 as exclusive; the log says shared`},
		{"a permit told of another count", func(ops []Op, obs *Observed) []Op {
			ops[0].Permits = 4
			return ops
		}, `client 1 was granted "pool" token 1 as semaphore of 4 permits; the log says semaphore of 3 permits`},
		{"a client asking in an unknown mode", func(ops []Op, obs *Observed) []Op {
			ops[6].Mode = "read"
			return ops
		}, `client 6's grant of "doc" token 16: unknown mode "read"`},
		{"a semaphore without permits", func(ops []Op, obs *Observed) []Op {
			delete(obs.Events[0].Detail, "permits")
			return ops
		}, `event 1 (grant of "pool" token 1): a semaphore of 0 permits`},
		{"an unknown mode", func(ops []Op, obs *Observed) []Op {
			obs.Events[3].Detail["mode"] = "read"
			return ops
		}, `event 4 (grant of "doc" token 16): unknown mode "read"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ops, obs := modes()
			ops = tc.mutate(ops, &obs)
			r := Check(ops, nil, nil, obs)
			found := false
			for _, v := range r.Violations {
				found = found || strings.Contains(v, tc.want)
			}
			if !found {
				t.Fatalf("want a violation containing %q; got %q", tc.want, r.Violations)
			}
		})
	}
}

// A reader's lease a killed session kept is taken over by the next
// writer, not by the next reader: readers may come beside it before the
// session's expiry, a writer only after it.
func TestKilledSessionKeepsAReadersLease(t *testing.T) {
	history := func(writerAt time.Duration) ([]Op, Observed) {
		r1 := sharedOp(grant(1, "doc", "r1", 1, "acquired", 0, 5*ms, 105*ms))
		r1.Bound = true
		ops := []Op{
			r1,
			{Client: 1, Kind: SessionKill, Owner: "r1", Session: 7, Call: 50 * ms, Return: 51 * ms},
			sharedOp(grant(2, "doc", "r2", 2, "acquired", 99*ms, 101*ms, 200*ms)),
			grant(3, "doc", "w", 3, "stolen", writerAt-ms, writerAt+ms, writerAt+100*ms),
		}
		obs := Observed{
			Events: []lockview.Event{
				sharedEv(ev(1, "doc", "acquired", "r1", 1, 4*ms)),
				sharedEv(ev(2, "doc", "acquired", "r2", 2, 100*ms)),
				stolenFrom(1, ev(3, "doc", "stolen", "w", 3, writerAt)),
			},
			Sessions: map[int64]*ObservedSession{7: {ExpiresAt: t0.Add(300 * ms), Leases: []BoundLease{{"doc", 1}}}},
		}
		return ops, obs
	}
	ops, obs := history(310 * ms)
	if r := Check(ops, nil, nil, obs); !r.OK() || r.Stats.KilledLeasesStolen != 1 {
		t.Fatalf("a correct history: %q, %+v", r.Violations, r.Stats)
	}
	ops, obs = history(250 * ms)
	r := Check(ops, nil, nil, obs)
	want := `killed session 7 of "r1" kept "doc" (token 1) until 2026-06-01T12:00:00.3Z, but event 3 granted it (stolen) to "w" with token 3`
	if !strings.Contains(strings.Join(r.Violations, "\n"), want) {
		t.Fatalf("want a violation containing %q; got %q", want, r.Violations)
	}
}
