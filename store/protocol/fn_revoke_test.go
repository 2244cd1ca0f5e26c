package protocol_test

import (
	"testing"
	"time"
)

// revokeArgs are the arguments of distributed_lock_revoke but the key.
type revokeArgs struct {
	token      tok
	forceAfter *time.Duration
	actor      string
	reason     string
}

func (a revokeArgs) call(key string, p prepared) (string, []any) {
	var forceUs any
	if a.forceAfter != nil {
		forceUs = a.forceAfter.Microseconds()
	}
	return `SELECT * FROM distributed_lock_revoke(key => $1, token => $2, force_after_us => $3, event_actor => $4, reason => $5)`,
		[]any{key, tokenArg(p, a.token), forceUs, null(a.actor), null(a.reason)}
}

func TestRevoke(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "distributed_lock_revoke")
	ask := revokeArgs{token: keptToken, actor: "alice", reason: "drain"}
	inTen := revokeArgs{token: keptToken, actor: "alice", reason: "drain", forceAfter: deadlineIn(10 * time.Second)}
	held := rowWant{owner: other, token: keptToken, expires: about(50 * time.Second), ttl: time.Minute,
		kind: "acquired", prevOwner: "earlier", prevToken: keptPrevious}
	revoked := func(row rowWant, detail map[string]any) want {
		return want{outcome: "revoked", owner: other, token: keptToken, row: row,
			events: []eventWant{{kind: "revoked", owner: other, token: keptToken, actor: "alice", detail: detail}}}
	}
	capped := held
	capped.expires = about(10 * time.Second)
	notHeld := want{outcome: "not_held", row: untouched}
	f.run(t, []fnCase{
		{name: "no row", state: noRow(), call: ask.call, want: notHeld},
		{name: "free", state: free(), call: ask.call, want: notHeld},
		{name: "expired", state: lapsed(other), call: ask.call, want: notHeld},
		{name: "held, an older token", state: heldBy(other), call: revokeArgs{token: keptPrevious}.call, want: notHeld},
		{name: "a shared key's group", state: sharedBy(other), call: ask.call, want: notHeld},
		{name: "held: asked, the lease untouched", state: heldBy(other), call: ask.call,
			want: revoked(held, map[string]any{"reason": "drain"})},
		{name: "held, a deadline: the lease ends by it", state: heldBy(other), call: inTen.call,
			want: revoked(capped, map[string]any{"reason": "drain", "force_at": anyValue})},
		{name: "held, a deadline past its end: the end stays", state: heldBy(other),
			call: revokeArgs{token: keptToken, actor: "alice", forceAfter: deadlineIn(time.Hour)}.call,
			want: revoked(held, map[string]any{"force_at": anyValue})},
		{name: "revoked again with a later deadline: the earlier stays",
			state: heldBy(other).revoked(revokeRow{forceIn: deadlineIn(5 * time.Second)}), call: inTen.call,
			want: func() want {
				row := held
				row.expires = about(5 * time.Second)
				return revoked(row, map[string]any{"reason": "drain", "force_at": anyValue})
			}()},
		{name: "queued, a deadline: its waiters woken", state: heldBy(other).queued(w1), call: inTen.call,
			want: func() want {
				row := capped
				row.wakes = &span{0, time.Minute}
				w := revoked(row, map[string]any{"reason": "drain", "force_at": anyValue})
				w.waiters, w.notify = waiters(w1), []notifyWant{wakeUp}
				return w
			}()},
	})
}
