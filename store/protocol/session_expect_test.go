package protocol_test

import (
	"cmp"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

// sessionWant is a prepared session after the call. With untouched it must
// be exactly as prepared, bindings and all; with gone there must be none;
// otherwise its owner, host, pid, metadata, TTL and opening stay as
// prepared and the rest is checked.
type sessionWant struct {
	untouched, gone bool

	expires    span // expires_at − the read, unless keptExpiry
	keptExpiry bool // expires_at as prepared
	renewed    bool // renewed_at set by the call; else as prepared
	bound      []binding
}

// renewedSession is a session a heartbeat renewed, bound to these grants
// after it; keptSession one whose end the call left, bound to these.
func renewedSession(bound ...binding) sessionWant {
	return sessionWant{expires: about(sessionTTL), renewed: true, bound: bound}
}

func keptSession(bound ...binding) sessionWant {
	return sessionWant{keptExpiry: true, bound: bound}
}

var (
	untouchedSession = sessionWant{untouched: true}
	goneSession      = sessionWant{gone: true}
)

func (c checker) sessions(got []*sessionState, want []sessionWant) {
	c.t.Helper()
	if want == nil {
		for range got {
			want = append(want, untouchedSession)
		}
	}
	if len(want) != len(got) {
		c.t.Fatalf("the case wants %d sessions; it prepared %d", len(want), len(got))
	}
	for i, w := range want {
		g, before := got[i], c.sessionsBefore[i]
		switch {
		case w.untouched:
			if g == nil || !reflect.DeepEqual(g.stored(), before.stored()) {
				c.t.Errorf("session %d changed:\n got %v\nwant %v", i, deref(g), *before)
			}
			continue
		case w.gone:
			if g != nil {
				c.t.Errorf("session %d: %v; want none", i, *g)
			}
			continue
		case g == nil:
			c.t.Errorf("session %d is gone; want it kept", i)
			continue
		}
		kept := *g
		kept.ExpiresAt, kept.RenewedAt, kept.Bound = before.ExpiresAt, before.RenewedAt, before.Bound
		if !reflect.DeepEqual(kept.stored(), before.stored()) {
			c.t.Errorf("session %d: %v; want its owner, host, pid, metadata, ttl and opening as prepared (%v)", i, *g, *before)
		}
		if w.keptExpiry && !g.ExpiresAt.Equal(before.ExpiresAt) {
			c.t.Errorf("session %d expires at %v; want it as prepared (%v)", i, g.ExpiresAt, before.ExpiresAt)
		} else if !w.keptExpiry && !w.expires.holds(g.ExpiresIn) {
			c.t.Errorf("session %d expires in %v; want within [%v, %v]", i, g.ExpiresIn, w.expires.lo, w.expires.hi)
		}
		if w.renewed && (g.RenewedAgo == nil || !justNow.holds(-*g.RenewedAgo)) {
			c.t.Errorf("session %d renewed %s ago; want renewed by the call", i, show(g.RenewedAgo))
		} else if !w.renewed && show(g.RenewedAt) != show(before.RenewedAt) {
			c.t.Errorf("session %d renewed_at %s; want it as prepared (%s)", i, show(g.RenewedAt), show(before.RenewedAt))
		}
		if bound := c.p.refs(w.bound); !slices.Equal(g.Bound, bound) {
			c.t.Errorf("session %d binds %v; want %v", i, g.Bound, bound)
		}
	}
}

// refs are the bindings as stored, in key order.
func (p prepared) refs(bs []binding) []boundRef {
	var out []boundRef
	for _, b := range bs {
		key, token := p.ref(b)
		out = append(out, boundRef{Key: key, Token: token})
	}
	slices.SortFunc(out, func(a, b boundRef) int {
		return cmp.Or(strings.Compare(a.Key, b.Key), cmp.Compare(a.Token, b.Token))
	})
	return out
}

// A check: what a case wants beyond the fixture's columns, rows and
// sessions.
type check = func(t *testing.T, result map[string]any, p prepared, after observed)

// checks is every one of cs.
func checks(cs ...check) check {
	return func(t *testing.T, result map[string]any, p prepared, after observed) {
		t.Helper()
		for _, c := range cs {
			c(t, result, p, after)
		}
	}
}

// rowOf is the row of the case's key (name "") or of another key of its set,
// after the call.
func rowOf(t *testing.T, p prepared, after observed, name string) *lockState {
	t.Helper()
	if name == "" {
		return after.row
	}
	return p.other(t, name).row
}

// endsWithSession: the leases of these keys (the case's: "") now end when
// session i does, with its TTL; renewedWithIt: and were renewed at the
// instant it was (one heartbeat), else just now (a bind).
func endsWithSession(i int, renewedWithIt bool, names ...string) check {
	return func(t *testing.T, _ map[string]any, p prepared, after observed) {
		t.Helper()
		s := after.sessions[i]
		if s == nil {
			t.Fatalf("session %d is gone", i)
		}
		for _, name := range names {
			l := rowOf(t, p, after, name)
			switch {
			case l == nil:
				t.Errorf("key %q has no row", name)
			case !l.ExpiresAt.Equal(s.ExpiresAt) || l.TTL != s.TTL:
				t.Errorf("key %q: expires at %v, ttl %v; want the session's %v, %v", name, l.ExpiresAt, l.TTL, s.ExpiresAt, s.TTL)
			case renewedWithIt && (l.RenewedAt == nil || s.RenewedAt == nil || !l.RenewedAt.Equal(*s.RenewedAt)):
				t.Errorf("key %q renewed at %s; want when the session was (%s)", name, show(l.RenewedAt), show(s.RenewedAt))
			case !renewedWithIt && (l.RenewedAgo == nil || !justNow.holds(-*l.RenewedAgo)):
				t.Errorf("key %q renewed %s ago; want renewed by the call", name, show(l.RenewedAgo))
			}
		}
	}
}

// othersUntouched: the other keys of the set named are as prepared.
func othersUntouched(names ...string) check {
	return func(t *testing.T, _ map[string]any, p prepared, _ observed) {
		t.Helper()
		for _, name := range names {
			got, before := p.other(t, name).row, p.set.before[name].row
			if (got == nil) != (before == nil) || got != nil && !reflect.DeepEqual(got.stored(), before.stored()) {
				t.Errorf("%s changed:\n got %v\nwant %v", p.set.keys[name], deref(got), deref(before))
			}
		}
	}
}

// sessionColumns: the call's expires_at and ttl are session i's after it
// (i < 0: both NULL).
func sessionColumns(i int) check {
	return func(t *testing.T, result map[string]any, _ prepared, after observed) {
		t.Helper()
		at, isTime := result["expires_at"].(time.Time)
		ttl, isInterval := asDuration(result["ttl"])
		switch {
		case i < 0 && (result["expires_at"] != nil || result["ttl"] != nil):
			t.Errorf("expires_at %v, ttl %v; want NULL", result["expires_at"], result["ttl"])
		case i < 0:
		case after.sessions[i] == nil:
			t.Errorf("session %d is gone", i)
		case !isTime || !at.Equal(after.sessions[i].ExpiresAt) || !isInterval || ttl != after.sessions[i].TTL:
			t.Errorf("expires_at %v, ttl %v; want the session's %v, %v", result["expires_at"], result["ttl"],
				after.sessions[i].ExpiresAt, after.sessions[i].TTL)
		}
	}
}
