package protocol_test

import (
	"strings"
	"testing"
	"time"
)

// openSessionArgs are distributed_lock_open_session's arguments; with
// defaulted, host, pid and metadata are left out (nil: NULL).
type openSessionArgs struct {
	owner           string
	ttl             time.Duration
	defaulted       bool
	host, pid, meta any
}

func (a openSessionArgs) call(string, prepared) (string, []any) {
	if a.defaulted {
		return `SELECT * FROM distributed_lock_open_session(owner => $1, ttl_us => $2)`, []any{a.owner, a.ttl.Microseconds()}
	}
	return `SELECT * FROM distributed_lock_open_session(owner => $1, ttl_us => $2, host => $3, pid => $4, session_metadata => $5)`,
		[]any{a.owner, a.ttl.Microseconds(), a.host, a.pid, a.meta}
}

// opened: the call's row names a new session of owner on host as pid, with
// that metadata, opened just now, never renewed, binding nothing, and ending
// ttl after it opened, by the database's clock, as the call says.
func opened(owner, host string, pid int, metadata string, ttl time.Duration) check {
	return func(t *testing.T, result map[string]any, p prepared, _ observed) {
		t.Helper()
		id, _ := result["session_id"].(int64)
		s := readSession(t, p.db, id)
		if s == nil {
			t.Fatalf("no session %v (%v)", result["session_id"], result)
		}
		if s.Owner != owner || s.Host != host || int(s.PID) != pid || !sameJSON(s.Metadata, metadata) || s.TTL != ttl {
			t.Errorf("session %v; want owner %s, host %q, pid %d, metadata %s, ttl %v", *s, owner, host, pid, metadata, ttl)
		}
		if !justNow.holds(-s.OpenedAgo) || s.RenewedAt != nil || len(s.Bound) != 0 {
			t.Errorf("session %v opened %v ago; want opened by the call, never renewed, binding nothing", *s, s.OpenedAgo)
		}
		if !s.ExpiresAt.Equal(s.OpenedAt.Add(ttl)) || !about(ttl).holds(s.ExpiresIn) {
			t.Errorf("session expires at %v (in %v); want %v after it opened (%v)", s.ExpiresAt, s.ExpiresIn, ttl, s.OpenedAt)
		}
		at, _ := result["expires_at"].(time.Time)
		d, ok := asDuration(result["ttl"])
		if !at.Equal(s.ExpiresAt) || !ok || d != ttl {
			t.Errorf("expires_at %v, ttl %v; want the session's %v, %v", result["expires_at"], result["ttl"], s.ExpiresAt, ttl)
		}
	}
}

// Opening a session writes its row and touches no lock; what the domains
// refuse is refused.
func TestOpenSession(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "distributed_lock_open_session")
	withBad := func(change func(*openSessionArgs)) func(string, prepared) (string, []any) {
		a := openSessionArgs{owner: me, ttl: time.Minute}
		change(&a)
		return a.call
	}
	refused := want{err: "23514"}
	f.run(t, []fnCase{
		{name: "owner, host, pid and metadata", state: noRow(),
			call: openSessionArgs{owner: me, ttl: 90 * time.Second, host: "web-3", pid: 4242, meta: `{"build": "v7"}`}.call,
			want: want{row: untouched, check: opened(me, "web-3", 4242, `{"build": "v7"}`, 90*time.Second)}},
		{name: "no host, pid or metadata: none", state: noRow(), call: openSessionArgs{owner: me, ttl: time.Minute, defaulted: true}.call,
			want: want{row: untouched, check: opened(me, "", 0, `{}`, time.Minute)}},
		{name: "NULL host, pid and metadata: none", state: noRow(), call: openSessionArgs{owner: me, ttl: time.Minute}.call,
			want: want{row: untouched, check: opened(me, "", 0, `{}`, time.Minute)}},
		{name: "empty owner", state: noRow(), call: withBad(func(a *openSessionArgs) { a.owner = "" }), want: refused},
		{name: "the reserved owner", state: noRow(), call: withBad(func(a *openSessionArgs) { a.owner = "*" }), want: refused},
		{name: "owner of 256 bytes", state: noRow(), call: withBad(func(a *openSessionArgs) { a.owner = strings.Repeat("o", 256) }), want: refused},
		{name: "ttl of 0", state: noRow(), call: withBad(func(a *openSessionArgs) { a.ttl = 0 }), want: refused},
		{name: "ttl negative", state: noRow(), call: withBad(func(a *openSessionArgs) { a.ttl = -time.Second }), want: refused},
		{name: "metadata an array", state: noRow(), call: withBad(func(a *openSessionArgs) { a.meta = `[1]` }), want: refused},
		{name: "metadata a string", state: noRow(), call: withBad(func(a *openSessionArgs) { a.meta = `"x"` }), want: refused},
		{name: "metadata JSON null", state: noRow(), call: withBad(func(a *openSessionArgs) { a.meta = `null` }), want: refused},
		{name: "metadata over 8 KiB", state: noRow(), call: withBad(func(a *openSessionArgs) { a.meta = overSizedJSON }), want: refused},
		{name: "host of 256 bytes", state: noRow(), call: withBad(func(a *openSessionArgs) { a.host = strings.Repeat("h", 256) }), want: refused},
		{name: "ttl over a year", state: noRow(), call: withBad(func(a *openSessionArgs) { a.ttl = aYear + time.Microsecond }), want: refused},
	})
}
