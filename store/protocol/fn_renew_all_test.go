package protocol_test

import (
	"testing"
	"time"
)

// renewAllArgs: owner renews the case's key and the set's other keys, each
// with its prepared token (or a token of the row's previous grant).
type renewAllArgs struct {
	owner  string
	token  tok
	tokens int // how many tokens to name; 0: one per key
}

func (a renewAllArgs) call(key string, p prepared) (string, []any) {
	keys, tokens := []string{key}, []int64{tokenArg(p, a.token)}
	for _, n := range p.setNames() {
		keys, tokens = append(keys, p.set.keys[n]), append(tokens, tokenArg(p.set.prepared[n], keptToken))
	}
	if a.tokens > 0 {
		tokens = tokens[:a.tokens]
	}
	return `SELECT r.* FROM distributed_lock_renew_all(keys => $1, owner => $2, tokens => $3, ttl_us => $4) r
		ORDER BY r.lock_key = $5 DESC LIMIT 1`, []any{keys, a.owner, tokens, (2 * time.Minute).Microseconds(), key}
}

// otherRenewed: the set's key name was renewed for two minutes.
func otherRenewed(name string) func(t *testing.T, _ map[string]any, p prepared, _ observed) {
	return func(t *testing.T, _ map[string]any, p prepared, _ observed) {
		t.Helper()
		if o := p.other(t, name); o.row == nil || o.row.RenewCount != 1 || o.row.TTL != 2*time.Minute {
			t.Errorf("%s: %v; want renewed for 2m", p.set.keys[name], o.row)
		}
	}
}

func TestRenewAll(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "distributed_lock_renew_all")
	renewed := rowWant{owner: me, token: keptToken, expires: about(2 * time.Minute), ttl: 2 * time.Minute,
		kind: "acquired", prevOwner: "earlier", prevToken: keptPrevious, renewals: 1}
	f.run(t, []fnCase{
		{name: "every lease current: every one renewed", state: heldBy(me).and(also{name: "b", state: heldBy(me)}),
			call: renewAllArgs{owner: me, token: keptToken}.call, want: want{outcome: "renewed", owner: me, token: keptToken,
				row: renewed, check: otherRenewed("b")}},
		{name: "one lease expired: not held, the other renewed all the same", state: lapsed(me).and(also{name: "b", state: heldBy(me)}),
			call: renewAllArgs{owner: me, token: keptToken}.call, want: want{outcome: "not_held", row: untouched, check: otherRenewed("b")}},
		{name: "an older grant's token", state: heldBy(me).and(also{name: "b", state: heldBy(me)}),
			call: renewAllArgs{owner: me, token: keptPrevious}.call, want: want{outcome: "not_held", row: untouched, check: otherRenewed("b")}},
		{name: "a holder's slot and a lease: both renewed", state: sharedBy(other, me).and(also{name: "b", state: heldBy(me)}),
			call: renewAllArgs{owner: me, token: slotTok(2)}.call, want: want{outcome: "renewed", owner: me, token: slotTok(2),
				row: untouched, slots: []slotWant{asPrepared, slotRenewed(2, me, 2*time.Minute)}, check: otherRenewed("b")}},
		{name: "a token short", state: heldBy(me).and(also{name: "b", state: heldBy(me)}),
			call: renewAllArgs{owner: me, token: keptToken, tokens: 1}.call, want: want{err: "22023"}},
	})
}
