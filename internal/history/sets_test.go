package history

import (
	"strings"
	"testing"

	"github.com/lockctl/lockctl/internal/lockview"
)

// sets: owner s takes the set {x, y} (tokens 10 and 11) in one
// transaction; owner t's set {x, z} is refused meanwhile, and nothing of it
// is taken; s releases both; u's set {y, z} is granted in one transaction,
// but u's reply was lost.
func sets() ([]Op, Observed) {
	in := func(set string, op Op) Op { op.Set = set; return op }
	refused := func(client int, key, owner string) Op {
		return Op{Client: client, Kind: Grant, Key: key, Owner: owner, Result: Held, Set: "t.1", Call: 6 * ms, Return: 7 * ms}
	}
	lost := func(key string) Op {
		return Op{Client: 3, Kind: Grant, Key: key, Owner: "u", Result: Unknown, Set: "u.1", Call: 30 * ms, Return: 35 * ms, Err: "reply lost"}
	}
	ops := []Op{
		in("s.1", grant(1, "x", "s", 10, "acquired", 0, 5*ms, 105*ms)),
		in("s.1", grant(1, "y", "s", 11, "acquired", 0, 5*ms, 105*ms)),
		refused(2, "x", "t"), refused(2, "z", "t"),
		{Client: 1, Kind: Release, Key: "x", Owner: "s", Token: 10, Result: OK, Set: "s.2", Call: 20 * ms, Return: 21 * ms},
		{Client: 1, Kind: Release, Key: "y", Owner: "s", Token: 11, Result: OK, Set: "s.2", Call: 20 * ms, Return: 21 * ms},
		lost("y"), lost("z"),
	}
	obs := Observed{
		Events: []lockview.Event{
			ev(1, "x", "acquired", "s", 10, 4*ms),
			ev(2, "y", "acquired", "s", 11, 4*ms),
			ev(3, "x", "released", "s", 10, 20*ms),
			ev(4, "y", "released", "s", 11, 20*ms),
			ev(5, "y", "acquired", "u", 12, 32*ms),
			ev(6, "z", "acquired", "u", 13, 32*ms),
		},
		EventTx: map[int64]int64{1: 700, 2: 700, 3: 701, 4: 701, 5: 702, 6: 702},
	}
	return ops, obs
}

func TestSetHistoryPasses(t *testing.T) {
	ops, obs := sets()
	r := Check(ops, nil, nil, obs)
	if !r.OK() {
		t.Fatalf("violations in a correct history: %q", r.Violations)
	}
	if st := r.Stats; st.SetGrants != 1 || st.SetKeys != 2 || st.SetsRefused != 1 || st.Grants != 4 {
		t.Fatalf("stats = %+v", st)
	}
}

// TestSetKeyAskedForAgainAlone: u, not knowing its set {y, z} was granted
// (the reply lost), asks for z alone, as a process whose set failed takes
// a key of it on its own: the database renews the lease u's set was
// granted (same token, no grant event), or the reply to that is lost too.
// The set's transaction still granted the whole set.
func TestSetKeyAskedForAgainAlone(t *testing.T) {
	for name, single := range map[string]Op{
		"renewed": grant(3, "z", "u", 13, "renewed", 40*ms, 45*ms, 145*ms),
		"reply lost": {Client: 3, Kind: Grant, Key: "z", Owner: "u", Result: Unknown, Call: 40 * ms, Return: 45 * ms,
			Err: "reply lost"},
	} {
		t.Run(name, func(t *testing.T) {
			ops, obs := sets()
			r := Check(append(ops, single), nil, nil, obs)
			if !r.OK() {
				t.Fatalf("violations in a correct history: %q", r.Violations)
			}
		})
	}
}

// TestCheckerFlagsPartialSetGrants: a set's keys are granted in one
// transaction, all or none; tokens still rise on every key.
func TestCheckerFlagsPartialSetGrants(t *testing.T) {
	cases := []struct {
		name   string
		mutate func(ops []Op, obs *Observed) []Op
		want   string
	}{
		{"a granted set's keys in two transactions", func(ops []Op, obs *Observed) []Op {
			obs.EventTx[2] = 699
			return ops
		}, `partial grant of a set: call s.1 granted "x" token 10 to "s" in transaction 700, but "y" token 11 in transaction 699`},
		{"a key of a set whose reply was lost granted alone", func(ops []Op, obs *Observed) []Op {
			obs.Events = obs.Events[:5] // y granted to u, z not
			return ops
		}, `partial grant of a set: transaction 702 granted "u" only [y], not whole sets it asked for (u.1 [y z])`},
		{"a key of a set granted alone beside a lost ask for the other alone", func(ops []Op, obs *Observed) []Op {
			obs.Events = obs.Events[:5] // y granted to u, z not
			return append(ops, Op{Client: 3, Kind: Grant, Key: "z", Owner: "u", Result: Unknown, Call: 40 * ms, Return: 45 * ms})
		}, `partial grant of a set: transaction 702 granted "u" only [y], not whole sets it asked for (u.1 [y z])`},
		{"the rest of that set granted in another transaction", func(ops []Op, obs *Observed) []Op {
			obs.EventTx[6] = 703
			return ops
		}, `transaction 703 granted "u" only [z]`},
		{"a client told part of its set was granted", func(ops []Op, obs *Observed) []Op {
			ops[1] = Op{Client: 1, Kind: Grant, Key: "y", Owner: "s", Result: Held, Set: "s.1", Call: 0, Return: 5 * ms}
			obs.Events = append(obs.Events[:1], obs.Events[2:]...)
			obs.Events[2] = ev(4, "x", "acquired", "v", 11, 15*ms) // keep tokens apart
			return append(ops, grant(4, "x", "v", 11, "acquired", 14*ms, 16*ms, 115*ms))
		}, "partial grant of a set: call s.1 of \"s\" was told 1 of its 2 keys were granted"},
		{"a refused set's key granted", func(ops []Op, obs *Observed) []Op {
			obs.Events = append(obs.Events, ev(7, "z", "acquired", "t", 14, 40*ms))
			obs.EventTx[7] = 704
			return ops
		}, `the log grants "z" token 14 to "t", which no client was told`},
		{"a token going backwards on a key of a set", func(ops []Op, obs *Observed) []Op {
			*obs.Events[4].Token = 9
			return ops
		}, `token went backwards on "y"`},
		{"transactions not observed", func(ops []Op, obs *Observed) []Op {
			obs.EventTx = nil
			return ops
		}, "the event log's transactions were not observed"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ops, obs := sets()
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

// mixedSet: reader r holds "doc" shared (token 1); owner s's set takes
// "x" alone and "doc" shared beside r, in one transaction (tokens 2 and
// 3); s releases both.
func mixedSet() ([]Op, Observed) {
	in := func(op Op) Op { op.Set = "s.1"; return op }
	ops := []Op{
		sharedOp(grant(1, "doc", "r", 1, "acquired", 0, 5*ms, 105*ms)),
		in(grant(2, "x", "s", 2, "acquired", 10*ms, 15*ms, 115*ms)),
		in(sharedOp(grant(2, "doc", "s", 3, "acquired", 10*ms, 15*ms, 115*ms))),
		{Client: 2, Kind: Release, Key: "x", Owner: "s", Token: 2, Result: OK, Set: "s.2", Call: 20 * ms, Return: 21 * ms},
		{Client: 2, Kind: Release, Key: "doc", Owner: "s", Token: 3, Result: OK, Set: "s.2", Call: 20 * ms, Return: 21 * ms},
	}
	obs := Observed{
		Events: []lockview.Event{
			sharedEv(ev(1, "doc", "acquired", "r", 1, 4*ms)),
			ev(2, "x", "acquired", "s", 2, 12*ms),
			sharedEv(ev(3, "doc", "acquired", "s", 3, 12*ms)),
			ev(4, "x", "released", "s", 2, 20*ms),
			ev(5, "doc", "released", "s", 3, 20*ms),
		},
		EventTx: map[int64]int64{1: 700, 2: 701, 3: 701, 4: 702, 5: 702},
	}
	return ops, obs
}

// TestMixedSetHistory: a set whose keys ask for different modes is judged
// key by key, each in the mode it asked for: its shared lease beside a
// reader passes, and is counted a mixed set; the same lease granted
// exclusive, or beside a writer, is an overlap.
func TestMixedSetHistory(t *testing.T) {
	ops, obs := mixedSet()
	r := Check(ops, nil, nil, obs)
	if !r.OK() {
		t.Fatalf("violations in a correct history: %q", r.Violations)
	}
	if st := r.Stats; st.SetGrants != 1 || st.MixedSetGrants != 1 || st.SharedGrants != 2 {
		t.Fatalf("stats = %+v", st)
	}
	for name, mutate := range map[string]func(ops []Op, obs *Observed){
		"the set's key granted exclusive beside the reader": func(ops []Op, obs *Observed) {
			ops[2].Mode = ""
			obs.Events[2].Detail = nil
		},
		"the reader a writer": func(ops []Op, obs *Observed) {
			ops[0].Mode = ""
			obs.Events[0].Detail = nil
		},
	} {
		t.Run(name, func(t *testing.T) {
			ops, obs := mixedSet()
			mutate(ops, &obs)
			r := Check(ops, nil, nil, obs)
			found := false
			for _, v := range r.Violations {
				found = found || strings.Contains(v, `overlapping leases on "doc"`)
			}
			if !found {
				t.Fatalf("want an overlap on doc; got %q", r.Violations)
			}
		})
	}
}

// TestSetViolationTellsTheStory: a violation of property 7 carries what
// the history says of the set's owner, its ops and its events with their
// transactions and details, so the failing run's log is enough to read it.
func TestSetViolationTellsTheStory(t *testing.T) {
	ops, obs := sets()
	obs.Events = obs.Events[:5] // y granted to u, z not
	obs.Events[4].Detail = map[string]any{"waiter_id": 41, "waited_ms": 3}
	r := Check(ops, nil, nil, obs)
	want := `(u.1 [y z]); ops: [grant u.1 y=unknown] [grant u.1 z=unknown]; log: [ev 5 acquired y #12 tx 702 ` +
		t0.Add(32*ms).Format("15:04:05.000000") + ` waited_ms=3 waiter_id=41]`
	if len(r.Violations) != 1 || !strings.HasSuffix(r.Violations[0], want) {
		t.Fatalf("want one violation ending %q; got %q", want, r.Violations)
	}
}
