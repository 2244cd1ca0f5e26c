// Package anylang holds lock clients written in other languages than Go and
// the tests that run them against a real server, side by side with Go
// lockers. Because the lock protocol is a set of SQL functions
// (distributed_lock_acquire, _renew, _release, _fence, …; docs/protocol.md),
// a client in any language gets the same guarantees: the tests check that
// fencing tokens strictly increase across every client and no two holds
// overlap, with internal/history's checker; and that shared leases and
// semaphore permits taken from Java and Go together never have a key held
// by more owners than its permits, nor a writer beside a reader.
//
// The clients live in testdata, out of the Go build: testdata/java is a
// plain-JDBC version of the reference Java service (DistributedLock.java)
// and the drivers the tests run (Contend.java for exclusive leases,
// Share.java for shared leases and permits, Ops.java what they share);
// testdata/psql is a shell script that runs a command under a lock with
// psql.
package anylang
