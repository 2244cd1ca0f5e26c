// Package faults is lockctl's fault-injection suite: it runs many workers
// that hold locks with locker.Keepalive — some of them sets of keys taken at
// once (one Acquire, one Keepalive, one Release), half of those mixing
// modes (exclusive keys beside a shared lease or a permit), half of the workers
// with a lock-delay, a few readers sharing a key that they also take
// alone now and then, converting what they hold of it (a writer
// downgrades, a reader upgrades, two readers upgrading at once are a
// deadlock), and holders of a semaphore's permits — and session
// workers whose processes keep two to four leases each with one
// locker.Session (Session.Keepalive, Close), now and then a shared lease
// or a permit among them (alone or in a set), and make fenced
// writes to a guarded table, while an injector breaks things at seeded
// random moments —
// terminated backends (mid-acquire, mid-renew, mid-heartbeat,
// mid-fenced-write), fast and crash restarts of PostgreSQL (a crash while a
// session's heartbeat waits for a lease's row when a session keeps one),
// session processes killed as SIGKILL would (nothing of them reaches the
// database after), slow statements holding a lock row, statement
// timeouts on worker connections, holders that freeze past their TTL and
// then resume (zombies), and the fair queue's failures: a waiter that dies
// while queued (the lease handed to it lapses unclaimed at the end of its
// claim window) and a crash while a release that would hand the lease to
// the queue waits for the key's row. Workers record every grant, release, fenced write
// and end of a kept lease in a history.Recorder and write to history's
// guarded table; internal/history's checker then proves from that table,
// the lock event log and the workers' records that, among the rest of the
// lock contract,
//
//   - on every key, committed writes carry non-decreasing tokens in commit
//     order, and every write saw its own grant committed and no newer one
//     (no two committed fenced writes on a key came from overlapping
//     leases);
//   - every write a worker was told committed is there, and none it was told
//     failed is (a commit whose reply was lost is "unknown": either way is
//     fine);
//   - every holder whose lease was lost had its Keepalive context cancelled
//     before the lease could be stolen: before its local deadline (the
//     monotonic send time of the last renewal plus TTL) and before the
//     database's expires_at of that renewal, and before any steal of it;
//   - no token was handed out twice, tokens only go up per key, and the
//     event log and the workers agree on every grant;
//   - no writer held the shared key beside a reader, no more holders than
//     its permits held the semaphore, and tokens rose from readers to
//     writers and back, across downgrades and upgrades too (each ends its
//     old lease in the transaction that grants the new one);
//   - no grant came inside the lock-delay of a lease that ended without its
//     holder's release (half the workers' leases carry one), and every set
//     was granted whole, in one transaction, or not at all;
//   - every lease a killed process's session kept was granted to nobody
//     before the session's last expires_at (plus the lease's lock-delay);
//   - no other owner heard of a grant of a key that conflicts with a lease
//     before the last instant its holder's Lease.ValidFor vouched for, for
//     every kind of kept lease (workers write only while it vouches).
//
// The run lasts its Duration, or up to twice as long until the injector has
// tried every kind of fault once.
//
// The suite runs on its own throwaway server (pgtemp), never a shared one,
// because it restarts it. Run it with `go test ./internal/faults/`; see
// faults_test.go for the flags of the long run.
package faults
