// Package lockmetrics measures, in a service, how long its acquires wait
// for a key and how long it holds what they got, as Prometheus histograms
// by the key's prefix, for the service to register with its registry:
//
//	c, err := lockmetrics.New(lockmetrics.Config{})
//	prometheus.MustRegister(c)
//	…
//	leases, hold, err := lockmetrics.Acquire(c, key, func() ([]locker.Lease, error) {
//		return lk.Acquire(ctx, pool, locker.Request{Keys: locker.Keys(key), Owner: owner, Wait: time.Minute})
//	})
//	if err != nil { … }
//	defer hold.End() // when the lease ends: released, lost or expired
//
// `lockctl metrics` exports the same histograms (lockctl_wait_seconds,
// lockctl_hold_seconds) computed from the event log on the server; these
// are the caller's view (locker_wait_seconds, locker_hold_seconds): the
// wait runs from the call to its return, so it includes the database
// calls' time, the network's and the pool's (a grant at the first try is
// a round trip, not 0), and every acquire is observed whether the locker
// logs grants or not. The hold runs from the acquire's return to End.
//
// The package knows nothing of locker's types: it times a function the
// service calls, whatever its Request (a try, a wait, a set of keys, a
// shared lease). A call that returns an error counts as a wait given up
// (outcome="gave_up"): refused at once, timed out, cancelled or failed.
// Labels are bounded as `lockctl metrics`' are: the first MaxPrefixes
// prefixes each their own, every later one "other".
package lockmetrics
