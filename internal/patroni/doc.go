// Package patroni tests lockctl on a real Patroni cluster, on loopback
// only: one etcd and two Patroni nodes (Debian's `patroni` 3.0.2 and
// `etcd-server` 3.4, which .ci/run installs) running PostgreSQL from a
// temporary directory as the account pgtemp runs servers as.
//
// TestSwitchoverAndFailover connects everything through one multi-host DSN
// (target_session_attrs=read-write), as a service behind Patroni would:
// lockers taking and releasing keys (releases durable), lockers holding
// and renewing leases, a queue of waiting Acquire calls on one key woken
// by a Notifier, and the console's data source (tui.NewPoolSource), whose
// snapshots name the server the console's header shows. It then makes a
// switchover (Patroni's REST API) and a failover (the leader's Patroni and
// PostgreSQL killed) and checks, from what the clients were told:
//
//   - every token granted after a change of primary is above every token
//     acknowledged before the change began;
//   - no acknowledged release is undone: Patroni runs in synchronous mode,
//     so a commit is acknowledged only once the standby has it;
//   - the held leases renew on the new primary with the same token, and
//     every waiter gets the key in the end;
//   - the console reads from the new primary and names it;
//   - the processes keeping several leases with one locker.Session carry
//     on as docs/failover.md ("Sessions") says: heartbeats refused during
//     the change are retried, one reaches the new primary within the
//     session's trust window, and the session goes on there with its
//     leases under their tokens; no session or Keepalive ends.
//
// Without etcd, Patroni or PostgreSQL the test skips, saying what to
// install; under CI=true it fails instead. The package has no code of its
// own.
package patroni
