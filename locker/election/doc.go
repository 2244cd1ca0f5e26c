// Package election elects one leader among the processes that campaign for
// a key, as etcd's concurrency.Election does, on locker's leases.
//
// A key's leader is the holder of its exclusive lease; its term is the
// lease's fencing token, larger than every term before it, so a resource
// that checks tokens refuses a deposed leader's writes. Candidates queue in
// the key's queue: a Resign is a release, which hands the key to the next
// candidate in its own transaction (woken at once by a locker.Notifier);
// a leader that dies is followed when its lease expires, within its TTL.
// The key's metadata carries {"election": true, "value": …}: the mark the
// console shows, and the value the leader proclaims.
//
// Observe reads the leader from the database after every NOTIFY a
// proclamation sends (a NOTIFY is only a hint: anyone may send one), and
// otherwise at the leader's expiry and every Config.Recheck at most.
//
// docs/protocol.md ("Elections") gives the SQL, for clients in any language.
package election
