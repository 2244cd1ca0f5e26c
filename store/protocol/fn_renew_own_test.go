package protocol_test

import (
	"testing"
	"time"
)

// The owner calls the internal function directly with the key's row as
// distributed_lock_acquire_otherwise found it.
func renewOwnCall(key string, _ prepared) (string, []any) {
	return `SELECT r.* FROM distributed_lock l,
		distributed_lock_renew_own(res => ROW(l.lock_key, l.owner_id, l.fence_token, l.expires_at, l.ttl, NULL,
		                                      l.expires_at - clock_timestamp(), NULL, NULL)::distributed_lock_acquire_result,
		                           owner => $2, ttl_us => $3, lease_metadata => NULL, ts => clock_timestamp()) r
		WHERE l.lock_key = $1 AND l.slot = 0`, []any{key, me, 2 * time.Minute.Microseconds()}
}

// The holder's acquire renews its lease, same token; with the row locked
// by another transaction it is refused as held.
func TestRenewOwn(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "distributed_lock_renew_own")
	f.run(t, []fnCase{
		{name: "held by the caller: renewed", state: heldBy(me), call: renewOwnCall, want: want{
			outcome: "renewed", owner: me, token: keptToken, remaining: &span{},
			row: rowWant{owner: me, token: keptToken, expires: about(2 * time.Minute), ttl: 2 * time.Minute,
				kind: "acquired", prevOwner: "earlier", prevToken: keptPrevious, renewals: 1}}},
		{name: "held by the caller, the row being changed: held", state: heldBy(me), call: renewOwnCall,
			during: whileRowLocked, want: want{outcome: "held", owner: me, token: keptToken,
				remaining: &span{50*time.Second - slack, 50 * time.Second}, row: untouched, refusal: queueOf(0)}},
	})
}
