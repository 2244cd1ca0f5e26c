// Package faults is lockctl's fault-injection suite: it runs many workers
// that hold locks with locker.Keepalive and make fenced writes to a guarded
// table, while an injector breaks things at seeded random moments —
// terminated backends (mid-acquire, mid-renew, mid-fenced-write), fast and
// crash restarts of PostgreSQL, slow statements holding a lock row, statement
// timeouts on worker connections, and holders that freeze past their TTL and
// then resume (zombies). A checker then proves from the guarded table, the
// lock event log and the workers' own log that
//
//   - no two committed fenced writes on a key came from overlapping leases
//     (each write committed after its lease was granted and before the next
//     grant of the key committed);
//   - on every key, committed writes carry non-decreasing tokens in commit
//     order (fault_guarded_key.seq orders them exactly);
//   - every write a worker was told committed is there, and none it was told
//     rolled back is (a commit whose reply was lost is "unknown": either way
//     is fine);
//   - every holder whose lease was lost had its Keepalive context cancelled
//     before the lease could be stolen: before its local deadline (the
//     monotonic send time of the last renewal plus TTL) and before the
//     database's expires_at of that renewal, and before any steal of it;
//   - no token was handed out twice, and every grant a worker was told of is
//     in the event log.
//
// The suite runs on its own throwaway server (pgtemp), never a shared one,
// because it restarts it. Run it with `go test ./internal/faults/`; see
// faults_test.go for the flags of the long run.
package faults
