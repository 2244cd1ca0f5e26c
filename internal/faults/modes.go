package faults

import (
	"context"

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
// reader's is the shared key, shared, or one time in four alone (a writer
// after the readers); a permit holder's a permit of the semaphore key;
// any other worker's a key as pickKey picks it, alone.
func (w *worker) pickHold() (string, holdMode) {
	switch w.role.mode {
	case history.ModeShared:
		if w.rng.IntN(4) == 0 {
			return SharedKey, holdMode{}
		}
		return SharedKey, w.role
	case history.ModeSemaphore:
		return SemaphoreKey, w.role
	}
	return w.pickKey(), holdMode{}
}

// acquireIn asks for key in mode m for owner: once, or waiting until ctx
// ends (a polling AcquireShared or AcquirePermit, a queued Acquire).
func (w *worker) acquireIn(ctx context.Context, key, owner string, m holdMode, wait bool) (locker.Lease, error) {
	switch {
	case m.mode == history.ModeShared && wait:
		return w.lk.AcquireShared(ctx, w.acq, key, owner)
	case m.mode == history.ModeShared:
		return w.lk.TryAcquireShared(ctx, w.acq, key, owner)
	case m.mode == history.ModeSemaphore && wait:
		return w.lk.AcquirePermit(ctx, w.acq, key, owner, m.permits)
	case m.mode == history.ModeSemaphore:
		return w.lk.TryAcquirePermit(ctx, w.acq, key, owner, m.permits)
	case wait:
		return w.lk.Acquire(ctx, w.acq, key, owner)
	}
	return w.lk.TryAcquire(ctx, w.acq, key, owner)
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
