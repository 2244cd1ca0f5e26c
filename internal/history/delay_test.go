package history

import (
	"strings"
	"testing"
	"time"

	"github.com/lockctl/lockctl/internal/lockview"
)

// delayed: leases with a lock-delay of 50ms (d's is 40ms) ending every way.
// a's lease expires at 105ms and b steals the key at 160ms, after the
// delay; b releases it cleanly at 170ms, so c may take it at once (180ms);
// an operator force-releases c's lease at 200ms and d takes the key after
// the delay (260ms); d's lease is force-expired at 300ms, an operator ends
// its delay at 310ms, and e takes the key at 315ms.
func delayed() ([]Op, Observed) {
	g := func(client int, owner string, token int64, outcome string, call, ret, expires time.Duration, delay time.Duration) Op {
		op := grant(client, "k", owner, token, outcome, call, ret, expires)
		op.LockDelay = delay
		return op
	}
	ops := []Op{
		g(1, "a", 1, "acquired", 0, 5*ms, 105*ms, 50*ms),
		g(2, "b", 2, "stolen", 158*ms, 162*ms, 260*ms, 50*ms),
		{Client: 2, Kind: Release, Key: "k", Owner: "b", Token: 2, Result: OK, Call: 169 * ms, Return: 171 * ms},
		g(3, "c", 3, "acquired", 179*ms, 181*ms, 280*ms, 50*ms),
		g(4, "d", 4, "acquired", 259*ms, 261*ms, 360*ms, 40*ms),
		g(5, "e", 5, "stolen", 314*ms, 316*ms, 415*ms, 0),
	}
	forceExpired := ev(7, "k", "force_expired", "d", 4, 300*ms)
	forceExpired.Detail = map[string]any{"delay_until": t0.Add(340 * ms).Format(time.RFC3339Nano)}
	forceReleased := ev(5, "k", "force_released", "c", 3, 200*ms)
	forceReleased.Detail = map[string]any{"delay_until": t0.Add(250 * ms).Format(time.RFC3339Nano)}
	obs := Observed{Events: []lockview.Event{
		ev(1, "k", "acquired", "a", 1, 5*ms),
		ev(2, "k", "stolen", "b", 2, 160*ms),
		ev(3, "k", "released", "b", 2, 170*ms),
		ev(4, "k", "acquired", "c", 3, 180*ms),
		forceReleased,
		ev(6, "k", "acquired", "d", 4, 260*ms),
		forceExpired,
		{ID: 8, Key: "k", Kind: "delay_ended", Actor: "op", OccurredAt: t0.Add(310 * ms)},
		ev(9, "k", "stolen", "e", 5, 315*ms),
	}}
	return ops, obs
}

func TestDelayedHistoryPasses(t *testing.T) {
	ops, obs := delayed()
	r := Check(ops, nil, nil, obs)
	if !r.OK() {
		t.Fatalf("violations in a correct history: %q", r.Violations)
	}
	// b's steal and d's grant followed a delay; e's followed one an
	// operator ended; c's came inside the delay b's lease would have had,
	// had b not released it.
	if st := r.Stats; st.DelayedGrants != 3 || st.DelaysEnded != 1 || st.GrantsAfterCleanRelease != 1 {
		t.Fatalf("stats = %+v", st)
	}
}

// TestCheckerFlagsGrantsInsideALockDelay: no grant of a key inside the
// lock-delay of a lease that ended without its holder's release.
func TestCheckerFlagsGrantsInsideALockDelay(t *testing.T) {
	cases := []struct {
		name   string
		mutate func(ops []Op, obs *Observed) []Op
		want   string
	}{
		{"steal after the expiry, inside the delay", func(ops []Op, obs *Observed) []Op {
			obs.Events[1].OccurredAt = t0.Add(130 * ms) // a's delay runs 105–155ms
			return ops
		}, "grant inside a lock-delay on \"k\": event 2"},
		{"steal reply before the victim's delay could have ended", func(ops []Op, obs *Observed) []Op {
			ops[1].Call, ops[1].Return = 135*ms, 140*ms // a renewed at 0ms, TTL 100ms, delay 50ms
			return ops
		}, "grant inside a lock-delay: client 2 stole"},
		{"grant inside a force-release's delay", func(ops []Op, obs *Observed) []Op {
			obs.Events[5].OccurredAt = t0.Add(230 * ms)
			obs.Events[4].Detail = nil // the client's delay alone shows it
			return ops
		}, "grant inside a lock-delay on \"k\": event 6"},
		{"grant before the delay the database declared", func(ops []Op, obs *Observed) []Op {
			obs.Events[4].Detail["delay_until"] = t0.Add(270 * ms).Format(time.RFC3339Nano)
			return ops
		}, "delayed until " + t0.Add(270*ms).Format(time.RFC3339Nano)},
		{"grant inside a force-expire's delay, not ended", func(ops []Op, obs *Observed) []Op {
			obs.Events = append(obs.Events[:7], obs.Events[8]) // no delay_ended
			return ops
		}, "grant inside a lock-delay on \"k\": event 9"},
		{"grant inside a force-release's delay, the lease expired before", func(ops []Op, obs *Observed) []Op {
			// c's lease expired at 195ms, before the force-release at 200ms:
			// its delay ran until 245ms.
			ops[3].ExpiresAt = t0.Add(195 * ms)
			obs.Events[4].Detail = nil
			obs.Events[5].OccurredAt = t0.Add(240 * ms)
			return ops
		}, "grant inside a lock-delay on \"k\": event 6"},
		{"grant inside the delay of a lease whose reply was lost", func(ops []Op, obs *Observed) []Op {
			// c's grant reply was lost: the delay its force-release
			// declared is what bounds the next grant.
			ops[3].Result, ops[3].Token = Unknown, 0
			obs.Events[5].OccurredAt = t0.Add(240 * ms)
			return ops
		}, "grant inside a lock-delay on \"k\": event 6"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ops, obs := delayed()
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
