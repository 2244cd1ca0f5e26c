package history

import (
	"strings"
	"testing"
	"time"

	"github.com/lockctl/lockctl/internal/lockview"
)

// killed: s's session 7 keeps x (token 1, lock-delay 20ms) and y (token
// 2); its process is killed at 50ms; the session's last expires_at is
// 300ms. b steals x at 330ms (after the expiry and the delay) and y at
// 310ms.
func killed() ([]Op, Observed) {
	gx := grant(1, "x", "s", 1, "acquired", 0, 5*ms, 105*ms)
	gx.LockDelay = 20 * ms
	ops := []Op{
		gx,
		grant(1, "y", "s", 2, "acquired", 0, 5*ms, 105*ms),
		{Client: 1, Kind: SessionKill, Owner: "s", Session: 7, Call: 50 * ms, Return: 51 * ms},
		grant(2, "x", "b", 3, "stolen", 329*ms, 331*ms, 430*ms),
		grant(2, "y", "b", 4, "stolen", 309*ms, 311*ms, 410*ms),
	}
	obs := Observed{
		Events: []lockview.Event{
			ev(1, "x", "acquired", "s", 1, 4*ms),
			ev(2, "y", "acquired", "s", 2, 4*ms),
			ev(3, "y", "stolen", "b", 4, 310*ms),
			ev(4, "x", "stolen", "b", 3, 330*ms),
		},
		Sessions: map[int64]*ObservedSession{7: {ExpiresAt: t0.Add(300 * ms),
			Leases: []BoundLease{{"x", 1}, {"y", 2}}}},
	}
	return ops, obs
}

func TestKilledSessionHistoryPasses(t *testing.T) {
	ops, obs := killed()
	r := Check(ops, nil, nil, obs)
	if !r.OK() {
		t.Fatalf("violations in a correct history: %q", r.Violations)
	}
	if st := r.Stats; st.KilledSessions != 1 || st.KilledSessionLeases != 2 || st.KilledLeasesStolen != 2 {
		t.Fatalf("stats = %+v", st)
	}
}

// TestCheckerFlagsGrantsBeforeAKilledSessionExpired: the property 2 check
// knows only the grant's expiry (105ms), which the session's heartbeats
// moved to 300ms; the session check knows the session's.
func TestCheckerFlagsGrantsBeforeAKilledSessionExpired(t *testing.T) {
	cases := []struct {
		name   string
		mutate func(ops []Op, obs *Observed)
		want   string
	}{
		{"stolen before the session's expiry", func(ops []Op, obs *Observed) {
			obs.Events[2].OccurredAt = t0.Add(200 * ms)
		}, `killed session 7 of "s" kept "y" (token 2) until ` + t0.Add(300*ms).Format(time.RFC3339Nano)},
		{"stolen inside the lock-delay after it", func(ops []Op, obs *Observed) {
			obs.Events[3].OccurredAt = t0.Add(310 * ms)
		}, `kept "x" (token 1) until ` + t0.Add(320*ms).Format(time.RFC3339Nano)},
		{"the killed session gone", func(ops []Op, obs *Observed) {
			delete(obs.Sessions, 7)
		}, "session 7 of \"s\" was killed, but the database has no such session"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ops, obs := killed()
			tc.mutate(ops, &obs)
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

// A lease released before the next grant (a release in flight at the kill
// that committed) is not the session's to keep any more.
func TestKilledSessionLeaseReleasedFirstIsNotChecked(t *testing.T) {
	ops, obs := killed()
	obs.Events = append(obs.Events[:2], ev(5, "y", "released", "s", 2, 60*ms), ev(6, "y", "acquired", "b", 4, 70*ms), obs.Events[3])
	ops[4] = grant(2, "y", "b", 4, "acquired", 69*ms, 71*ms, 170*ms)
	r := Check(ops, nil, nil, obs)
	for _, v := range r.Violations {
		if strings.Contains(v, "killed session") {
			t.Fatalf("flagged a released lease: %s", v)
		}
	}
}

// A lease bound to a session takes the session's expiry, which may be
// earlier than its grant's: a steal before the grant's expiry is no overlap
// then (the holder's keepalive, property 5, is what must have ended).
func TestBoundLeaseMayEndBeforeItsGrantsExpiry(t *testing.T) {
	ops, obs := killed()
	ops[0].ExpiresAt = t0.Add(400 * ms) // the grant said 400ms; the binding made it the session's 300ms
	ops[0].Bound = true
	if r := Check(ops, nil, nil, obs); !r.OK() {
		t.Fatalf("violations: %q", r.Violations)
	}
	ops[0].Bound = false
	if r := Check(ops, nil, nil, obs); r.OK() {
		t.Fatal("a steal before an unbound lease's expiry passed")
	}
}
