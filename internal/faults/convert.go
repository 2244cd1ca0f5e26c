package faults

import (
	"context"
	"slices"
	"time"

	"github.com/lockctl/lockctl/internal/history"
	"github.com/lockctl/lockctl/locker"
)

// Every kind of lease in the mix: mode workers convert what they hold of
// SharedKey (a writer downgrades, a reader upgrades, waiting or not, and
// two readers upgrading at once are refused a deadlock), and session
// workers keep a shared lease or a permit beside their exclusive ones.
// Set workers' sets mix modes now and then (setKeys): exclusive keys
// beside a shared lease or a permit. History checks each conversion's
// lease, and each key of a set, as any other (history/convert.go).

// convertOneIn: one hold of SharedKey in this many by a mode worker ends in
// a conversion of its lease instead of a release.
const convertOneIn = 2

// convert changes the mode of the lease a mode worker holds of SharedKey
// alone, sometimes: a writer's is downgraded, a reader's upgraded (at
// once, or waiting up to two TTLs, keeping the shared lease meanwhile).
// The old lease's keepalive (ka) runs until the answer; the new lease is
// recorded as a grant, and false returned when there is none.
func (w *worker) convert(ctx context.Context, leases []locker.Lease, ka *locker.Keepalive) (locker.Lease, bool) {
	if w.permits == 0 || len(leases) != 1 || leases[0].Key != SharedKey || ka.Context().Err() != nil ||
		w.rng.IntN(convertOneIn) != 0 {
		return locker.Lease{}, false
	}
	lease := ka.Leases()[0]
	downgrade := lease.Mode != locker.ModeShared
	op := history.Op{Client: w.id, Kind: history.Grant, Key: lease.Key, Owner: lease.Owner, Call: w.rec.Now()}
	var next locker.Lease
	var err error
	what := "upgrade"
	if downgrade {
		what, op.Mode = "downgrade", history.ModeShared
		next, err = w.lk.Downgrade(ctx, w.acq, lease)
	} else {
		// An upgrade's lease carries no lock-delay (its hand-off asks for none).
		wait := time.Duration(0)
		if w.rng.IntN(2) == 0 {
			wait = 2 * w.ttl
		}
		next, err = w.lk.Upgrade(ctx, w.acq, lease, wait)
	}
	op.Return = w.rec.Now()
	op.Result, op.Err = history.GrantResultOf(err)
	if err == nil {
		op.Granted(next)
	}
	w.rec.Add(op)
	if err != nil {
		w.classify(what, err)
		return locker.Lease{}, false
	}
	w.counts.Observe(what + "d")
	return next, true
}

// takeModeKey has a session worker's process keep, one time in three, a
// shared lease of SharedKey or a permit of SemaphoreKey beside its other
// leases, bound to its session as they are (when the mode keys are in
// the mix: modePermits), unless a set of its took one.
func (w *sessionWorker) takeModeKey(ctx context.Context, p *process) {
	if w.modePermits == 0 || w.rng.IntN(3) != 0 || p.holdsModeKey() {
		return
	}
	key, m := SharedKey, holdMode{mode: history.ModeShared}
	if w.rng.IntN(2) == 0 {
		key, m = SemaphoreKey, holdMode{mode: history.ModeSemaphore, permits: w.modePermits}
	}
	lease, err := w.grantIn(ctx, key, p.owner, m, w.rng.IntN(2) == 0)
	if err != nil {
		w.classify("acquire_"+m.mode, err)
		return
	}
	w.counts.Observe("session_" + m.mode + "_granted")
	w.keep(ctx, p, []locker.Lease{lease})
}

// mixOneIn: one set in this many, while the mode keys are in the mix,
// mixes modes.
const mixOneIn = 2

// setKeys are the keys a set asks for: names, each alone, or, one set in
// mixOneIn while the mode keys are in the mix (modePermits), in mixed
// modes: its last key shared, or a mode key beside them (SharedKey shared,
// a permit of SemaphoreKey): one all-or-none call that writes some keys
// and reads another.
func (w *worker) setKeys(names []string) []locker.Key {
	keys := locker.Keys(names...)
	if w.modePermits == 0 || w.rng.IntN(mixOneIn) != 0 {
		return keys
	}
	switch w.rng.IntN(3) {
	case 0:
		keys[len(keys)-1].Mode = locker.ModeShared
		return keys
	case 1:
		return append(keys, locker.Key{Name: SharedKey, Mode: locker.ModeShared})
	}
	return append(keys, locker.Key{Name: SemaphoreKey, Mode: locker.ModeSemaphore, Permits: w.modePermits})
}

// mixed reports whether keys ask for more than exclusive leases
// (setKeys).
func mixed(keys []locker.Key) bool {
	return slices.ContainsFunc(keys, func(k locker.Key) bool { return k.Mode != "" })
}

// holdsModeKey reports whether p keeps a lease of a mode key already (a
// set of its took one).
func (p *process) holdsModeKey() bool {
	for _, h := range p.holds {
		for _, lease := range h.ka.Leases() {
			if lease.Key == SharedKey || lease.Key == SemaphoreKey {
				return true
			}
		}
	}
	return false
}
