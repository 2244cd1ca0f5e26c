package history

import (
	"strings"
	"testing"
	"time"

	"github.com/lockctl/lockctl/internal/lockview"
)

var t0 = time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)

func ev(id int64, key, kind, owner string, token int64, at time.Duration) lockview.Event {
	return lockview.Event{ID: id, Key: key, Kind: kind, Owner: &owner, Token: &token, Actor: owner, OccurredAt: t0.Add(at)}
}

func grant(client int, key, owner string, token int64, outcome string, call, ret, expires time.Duration) Op {
	return Op{Client: client, Kind: Grant, Key: key, Owner: owner, Token: token, Result: OK, Outcome: outcome,
		ExpiresAt: t0.Add(expires), TTL: 100 * time.Millisecond, Call: call, Return: ret}
}

const ms = time.Millisecond

// clean: a acquires k (token 1) and writes; it expires; b steals it (token
// 2) and writes; b releases; a acquires again (token 3).
func clean() ([]Op, Observed) {
	ops := []Op{
		grant(1, "k", "a", 1, "acquired", 0, 5*ms, 105*ms),
		{Client: 1, Kind: Write, Key: "k", Owner: "a", Token: 1, WriterSeq: 1, Result: OK, Call: 6 * ms, Return: 8 * ms},
		grant(2, "k", "b", 2, "stolen", 150*ms, 155*ms, 255*ms),
		{Client: 1, Kind: Write, Key: "k", Owner: "a", Token: 1, WriterSeq: 2, Result: NotHeld, Call: 160 * ms, Return: 161 * ms},
		{Client: 2, Kind: Write, Key: "k", Owner: "b", Token: 2, WriterSeq: 1, Result: OK, Call: 160 * ms, Return: 162 * ms},
		{Client: 2, Kind: Release, Key: "k", Owner: "b", Token: 2, Result: OK, Call: 170 * ms, Return: 171 * ms},
		grant(1, "k", "a", 3, "acquired", 180*ms, 181*ms, 281*ms),
	}
	obs := Observed{
		Events: []lockview.Event{
			ev(1, "k", "acquired", "a", 1, 5*ms),
			ev(2, "k", "stolen", "b", 2, 153*ms),
			ev(3, "k", "released", "b", 2, 170*ms),
			ev(4, "k", "acquired", "a", 3, 180*ms),
		},
		Writes: []GuardedWrite{
			{Key: "k", Token: 1, Writer: "a", WriterSeq: 1, CommitSeq: 1},
			{Key: "k", Token: 2, Writer: "b", WriterSeq: 1, CommitSeq: 2},
		},
		SeenToken: []int64{1, 2},
	}
	return ops, obs
}

func TestCleanHistoryPasses(t *testing.T) {
	ops, obs := clean()
	r := Check(ops, cleanEnds(), nil, obs)
	if !r.OK() {
		t.Fatalf("violations in a correct history: %v", r.Violations)
	}
	if r.Stats.Grants != 3 || r.Stats.Steals != 1 || r.Stats.FencedWrites != 2 || r.Stats.RejectedWrites != 1 ||
		r.Stats.LeasesLost != 1 || r.Stats.StealsOfEndedLeases != 1 {
		t.Fatalf("stats = %+v", r.Stats)
	}
}

// A wait refused as a deadlock is logged with no token: the checker counts
// it and holds the key's grants around it to the usual rules.
func TestDeadlockRefusalsPass(t *testing.T) {
	ops, obs := clean()
	c, stale := "c", int64(1)
	refused := lockview.Event{ID: 5, Key: "k", Kind: "deadlock_refused", Owner: &c, Actor: c, OccurredAt: t0.Add(160 * ms),
		Detail: map[string]any{"cycle": []any{map[string]any{"owner": "c", "key": "k"}, map[string]any{"owner": "b", "key": "j"}}}}
	obs.Events = append(obs.Events[:2:2], append([]lockview.Event{refused}, obs.Events[2:]...)...)
	r := Check(ops, cleanEnds(), nil, obs)
	if !r.OK() {
		t.Fatalf("violations in a correct history: %v", r.Violations)
	}
	if r.Stats.DeadlocksRefused != 1 || r.Stats.Grants != 3 {
		t.Fatalf("stats = %+v", r.Stats)
	}
	// The events around it are still checked: b's release after it must
	// name the key's current grant.
	obs.Events[3].Token = &stale
	if r := Check(ops, cleanEnds(), nil, obs); r.OK() {
		t.Fatal("a release of a token not current passed beside a deadlock refusal")
	}
}

// A wait given up is logged with its wait and no token (its caller never
// got a lease): the checker passes over it.
func TestWaitsGivenUpPass(t *testing.T) {
	ops, obs := clean()
	c := "c"
	gaveUp := lockview.Event{ID: 5, Key: "k", Kind: "gave_up", Owner: &c, Actor: c, OccurredAt: t0.Add(160 * ms),
		Detail: map[string]any{"waited_ms": float64(120)}}
	obs.Events = append(obs.Events[:2:2], append([]lockview.Event{gaveUp}, obs.Events[2:]...)...)
	if r := Check(ops, cleanEnds(), nil, obs); !r.OK() || r.Stats.Grants != 3 {
		t.Fatalf("a correct history with a wait given up: %v, stats %+v", r.Violations, r.Stats)
	}
}

func TestCheckerFlags(t *testing.T) {
	cases := []struct {
		name   string
		mutate func(ops []Op, obs *Observed) []Op
		want   string
	}{
		{"token backwards after a release", func(ops []Op, obs *Observed) []Op {
			*obs.Events[3].Token = 2
			ops[6].Token = 2
			return ops
		}, "token went backwards"},
		{"token on two keys", func(ops []Op, obs *Observed) []Op {
			obs.Events = append(obs.Events, ev(5, "other", "acquired", "c", 3, 200*ms))
			return append(ops, grant(3, "other", "c", 3, "acquired", 199*ms, 201*ms, 300*ms))
		}, "granted twice"},
		{"steal before the victim's expiry", func(ops []Op, obs *Observed) []Op {
			obs.Events[1].OccurredAt = t0.Add(90 * ms)
			return ops
		}, "overlapping leases"},
		{"steal reply before the victim could have expired", func(ops []Op, obs *Observed) []Op {
			ops[2].Return = 60 * ms
			return ops
		}, "lasted at least until"},
		{"release of a token that is not current", func(ops []Op, obs *Observed) []Op {
			*obs.Events[2].Token = 1
			return ops
		}, "not the key's current grant"},
		{"a grant no client was told about", func(ops []Op, obs *Observed) []Op {
			return ops[:6] // a's last grant is logged, but no client saw it
		}, "which no client was told"},
		{"a grant missing from the log", func(ops []Op, obs *Observed) []Op {
			return append(ops, grant(4, "z", "d", 9, "acquired", 300*ms, 301*ms, 400*ms))
		}, "the log does not have"},
		{"real-time order", func(ops []Op, obs *Observed) []Op {
			// b's grant of 2 is sent after a's grant of 3 returned.
			ops[2].Call, ops[2].Return = 190*ms, 195*ms
			return ops
		}, "real-time order"},
		{"older token written after a newer one", func(ops []Op, obs *Observed) []Op {
			obs.Writes = append(obs.Writes, GuardedWrite{Key: "k", Token: 1, Writer: "a", WriterSeq: 2, CommitSeq: 3})
			obs.SeenToken = append(obs.SeenToken, 1)
			ops[3].Result = OK
			return ops
		}, "stale write"},
		{"write after a newer grant committed", func(ops []Op, obs *Observed) []Op {
			obs.SeenToken[0] = 2
			return ops
		}, "already committed"},
		{"write with a token granted to someone else", func(ops []Op, obs *Observed) []Op {
			obs.Writes[1].Writer = "a"
			obs.Writes[1].WriterSeq = 2
			ops[3].Result = Unknown
			return ops
		}, "not granted to it"},
		{"committed write missing", func(ops []Op, obs *Observed) []Op {
			obs.Writes, obs.SeenToken = obs.Writes[:1], obs.SeenToken[:1]
			return ops
		}, "not in the table"},
		{"write before its grant was committed", func(ops []Op, obs *Observed) []Op {
			obs.SeenToken[1] = 1
			return ops
		}, "before its grant was committed"},
		{"refused write present", func(ops []Op, obs *Observed) []Op {
			ops[1].Result = NotHeld
			return ops
		}, "was refused"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ops, obs := clean()
			ops = tc.mutate(ops, &obs)
			r := Check(ops, cleanEnds(), nil, obs)
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

// cleanEnds: in clean(), a kept token 1 with a keepalive that reported it
// lost at 95ms, 10ms before the expiry it knew of and before b stole it.
func cleanEnds() []LeaseEnd {
	return []LeaseEnd{{Client: 1, Key: "k", Owner: "a", Token: 1, At: t0.Add(95 * ms), Lost: true,
		Remaining: 5 * ms, ExpiresAt: t0.Add(105 * ms), OnArrival: 95 * ms, Cause: "lease lost"}}
}

func TestCheckerFlagsLeaseEnds(t *testing.T) {
	cases := []struct {
		name   string
		mutate func(e *LeaseEnd)
		want   string
	}{
		{"keepalive cancelled after the local deadline", func(e *LeaseEnd) { e.Remaining = 0 }, "local deadline"},
		{"keepalive cancelled after the known expiry", func(e *LeaseEnd) { e.At = t0.Add(106 * ms) }, "not before the expiry"},
		{"stolen while still trusted", func(e *LeaseEnd) {
			e.At, e.ExpiresAt, e.Lost = t0.Add(160*ms), t0.Add(200*ms), false
		}, "while client 1 still trusted it"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ops, obs := clean()
			ends := cleanEnds()
			tc.mutate(&ends[0])
			r := Check(ops, ends, nil, obs)
			found := false
			for _, v := range r.Violations {
				found = found || strings.Contains(v, tc.want)
			}
			if !found {
				t.Fatalf("want a violation containing %q; got %q", tc.want, r.Violations)
			}
		})
	}
	// A lease already past its local deadline on arrival is a finding, not
	// a violation: no keepalive can cancel before that deadline, nor before
	// an expiry that may have passed before the reply came. Its keepalive
	// must end before it returns: the lease is never trusted.
	ops, obs := clean()
	ends := cleanEnds()
	ends[0].OnArrival, ends[0].Remaining, ends[0].EndedAtStart = 0, 0, true
	ends[0].At = ends[0].ExpiresAt.Add(10 * ms)
	if r := Check(ops, ends, nil, obs); !r.OK() || r.Stats.UntrustedOnArrival != 1 {
		t.Fatalf("untrusted on arrival: %q, %+v", r.Violations, r.Stats)
	}
	ends[0].EndedAtStart = false
	if r := Check(ops, ends, nil, obs); r.OK() || !strings.Contains(strings.Join(r.Violations, "\n"), "did not end before it returned") {
		t.Fatalf("a keepalive of a lease untrusted on arrival that did not end at once: %q", r.Violations)
	}
	ends[0].EndedAtStart = true
	// So is one that arrived inside its keepalive's safety margin: its
	// trust window had passed, and the keepalive cancels at its first look.
	ends[0].OnArrival, ends[0].Margin = 8*ms, 25*ms
	if r := Check(ops, ends, nil, obs); !r.OK() || r.Stats.UntrustedOnArrival != 1 {
		t.Fatalf("arrived inside its safety margin: %q, %+v", r.Violations, r.Stats)
	}
	// With the margin unknown it is not counted as untrusted on arrival,
	// but a keepalive that ended before it was handed over (a session's
	// binding that failed, say) never vouched for its lease: when it ended
	// is no violation.
	ends[0].Margin = 0
	if r := Check(ops, ends, nil, obs); !r.OK() || r.Stats.UntrustedOnArrival != 0 {
		t.Fatalf("a keepalive ended before it was handed over: %q, %+v", r.Violations, r.Stats)
	}
	// A lease handed off from a queue is trusted to a margin of at most
	// half its claim window: arriving inside Margin, it may still be
	// trusted for a moment, and is then held to its deadline as any other.
	ends[0].Margin, ends[0].EndedAtStart = 25*ms, false
	ends[0].Remaining, ends[0].At = 2*ms, ends[0].ExpiresAt.Add(-5*ms)
	if r := Check(ops, ends, nil, obs); !r.OK() || r.Stats.UntrustedOnArrival != 0 {
		t.Fatalf("a handed-off lease trusted for a moment, cancelled in time: %q, %+v", r.Violations, r.Stats)
	}
	ends[0].Remaining = 0
	if r := Check(ops, ends, nil, obs); r.OK() {
		t.Fatal("a handed-off lease trusted for a moment, cancelled after its local deadline")
	}
}

// A lazy release (committed without waiting for the disk) may be lost
// with a server crash after it; the lease then runs to its expiry. Lost
// without a crash, or lost though it was durable, it is a violation.
func TestLostLazyReleaseNeedsACrash(t *testing.T) {
	// clean() without b's release in the log and without a's last grant
	// (which a lost release would have made wait for b's expiry).
	lost := func(lazy bool, crashAt time.Duration) ([]Op, Observed) {
		ops, obs := clean()
		ops = ops[:6]
		ops[5].Lazy = lazy
		obs.Events = obs.Events[:2]
		if crashAt > 0 {
			ops = append(ops, Op{Kind: Crash, Call: crashAt, Return: crashAt + 20*ms})
		}
		return ops, obs
	}
	// b's release returned at 171ms; a crash whose call spans that moment
	// (160–180ms) may have come after it, as may a later one.
	for _, crashAt := range []time.Duration{200 * ms, 160 * ms} {
		ops, obs := lost(true, crashAt)
		if r := Check(ops, cleanEnds(), nil, obs); !r.OK() || r.Stats.LazyReleasesLost != 1 {
			t.Fatalf("a lazy release lost in a crash at %s: violations %q, %d counted lost", crashAt, r.Violations, r.Stats.LazyReleasesLost)
		}
	}
	for _, c := range []struct {
		name    string
		lazy    bool
		crashAt time.Duration
	}{
		{"lazy, no crash", true, 0},
		{"lazy, crash before the release", true, 100 * ms},
		{"lazy, crash call returned before the release", true, 150 * ms},
		{"durable, crash after it", false, 200 * ms},
	} {
		ops, obs := lost(c.lazy, c.crashAt)
		r := Check(ops, cleanEnds(), nil, obs)
		if r.OK() || !strings.Contains(strings.Join(r.Violations, "\n"), "the log has no release") {
			t.Errorf("%s: violations %q; want the missing release flagged", c.name, r.Violations)
		}
	}
}
