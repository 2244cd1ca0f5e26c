package protocol_test

import "testing"

func setHandedCall(key string, p prepared) (string, []any) {
	keys, ids := []string{key}, []int64{p.waiter(me)}
	for _, n := range p.setNames() {
		keys, ids = append(keys, p.set.keys[n]), append(ids, p.set.prepared[n].waiter(me))
	}
	return `SELECT distributed_lock_set_handed(keys => $1, ids => $2, ts => clock_timestamp()) AS result`, []any{keys, ids}
}

func TestSetHanded(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "distributed_lock_set_handed")
	f.run(t, []fnCase{
		{name: "every key handed to the set", state: promisedTo(me).and(also{name: "b", state: promisedTo(me)}), call: setHandedCall,
			want: want{row: untouched, value: true}},
		{name: "one key still queued for", state: promisedTo(me).and(also{name: "b", state: heldBy(other).queuedSet(me)}), call: setHandedCall,
			want: want{row: untouched, value: false}},
		{name: "handed, the claim window run out", state: lapsedHandOffTo(me).and(also{name: "b", state: lapsedHandOffTo(me)}), call: setHandedCall,
			want: want{row: untouched, value: false}},
	})
}
