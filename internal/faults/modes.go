package faults

import (
	"context"
	"time"

	"github.com/lockctl/lockctl/internal/history"
	"github.com/lockctl/lockctl/locker"
)

// The mode workers' keys: one that readers share and take alone now and
// then, and a semaphore.
const (
	SharedKey    = "shared-0"
	SemaphoreKey = "sem-0"
)

// holdMode is how a worker asks for its key: alone (the zero value),
// shared, or as one of permits permits.
type holdMode struct {
	mode    string // "", history.ModeShared or history.ModeSemaphore
	permits int
}

func (m holdMode) exclusive() bool { return m.mode == "" }

// pickHold is the key of the worker's next hold and how it asks for it: a
// mode worker's is a permit of the semaphore key half the time, else the
// shared key, shared or, one time in four, alone (a writer among the
// readers); any other worker's a key as pickKey picks it, alone.
func (w *worker) pickHold() (string, holdMode) {
	if w.permits == 0 {
		return w.pickKey(), holdMode{}
	}
	switch n := w.rng.IntN(8); {
	case n < 4:
		return SemaphoreKey, holdMode{mode: history.ModeSemaphore, permits: w.permits}
	case n == 4:
		return SharedKey, holdMode{}
	}
	return SharedKey, holdMode{mode: history.ModeShared}
}

// backOff pauses after a refused grant: 5 to 30 ms, or a tenth to a fifth
// of a TTL for a mode worker, so that the mode workers add holders, not
// load: what the suite requires of a run (a claim window run out, a
// session killed while it keeps leases) needs the hot keys' workers to get
// their share of a loaded machine.
func (w *worker) backOff(ctx context.Context) {
	if w.permits == 0 {
		sleepCtx(ctx, time.Duration(5+w.rng.IntN(25))*time.Millisecond)
		return
	}
	sleepCtx(ctx, w.ttl/10+time.Duration(w.rng.Int64N(int64(w.ttl/10)+1)))
}

// acquireIn asks for key in mode m for owner: once, or waiting until ctx
// ends. An exclusive lease carries the worker's lock-delay.
func (w *worker) acquireIn(ctx context.Context, key, owner string, m holdMode, wait bool) (locker.Lease, error) {
	req := locker.Request{Keys: []locker.Key{{Name: key, Mode: m.mode, Permits: m.permits}}, Owner: owner}
	if m.exclusive() {
		req.LockDelay = w.delay
	}
	if wait {
		req.Wait = locker.WaitForever
	}
	leases, err := w.lk.Acquire(ctx, w.acq, req)
	if err != nil {
		return locker.Lease{}, err
	}
	return leases[0], nil
}

// rowKeys are the keys whose lock row a slow statement may hold: the hot
// keys, and the mode keys when mode workers hold them.
func rowKeys(hot []string, modeWorkers int) []string {
	keys := append([]string(nil), hot...)
	if modeWorkers > 0 {
		keys = append(keys, SharedKey, SemaphoreKey)
	}
	return keys
}
