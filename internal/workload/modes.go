package workload

import (
	"context"
	"math/rand/v2"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/lockctl/lockctl/internal/history"
	"github.com/lockctl/lockctl/internal/lockview"
	"github.com/lockctl/lockctl/internal/operator"
	"github.com/lockctl/lockctl/locker"
)

// The keys of ModeOneIn's holds: one that readers share and writers take
// alone, and a semaphore.
const (
	sharedKey    = "shared-0"
	semaphoreKey = "sem-0"
)

// holdMode is how a hold asks for its key: alone (the zero value), shared,
// or as one of permits permits.
type holdMode struct {
	mode    string // "", history.ModeShared or history.ModeSemaphore
	permits int
}

func (m holdMode) exclusive() bool { return m.mode == "" }

// pickHold picks the key of a hold and how it asks for it: one hold in
// ModeOneIn is on a mode key — the shared key, shared, or one time in
// five alone (a writer among the readers); or a permit of the semaphore —
// the others as pickKey picks.
func (w Workload) pickHold(r *rand.Rand) (string, holdMode) {
	if w.ModeOneIn <= 0 || r.IntN(w.ModeOneIn) != 0 {
		return w.pickKey(r), holdMode{}
	}
	switch r.IntN(5) {
	case 0:
		return sharedKey, holdMode{}
	case 1, 2:
		return sharedKey, holdMode{mode: history.ModeShared}
	}
	return semaphoreKey, holdMode{mode: history.ModeSemaphore, permits: w.permits()}
}

// permits is the semaphore key's permits.
func (w Workload) permits() int {
	if w.Permits > 0 {
		return w.Permits
	}
	return 3
}

// acquireIn asks c for key in mode m for owner, once or waiting as long
// as ctx lasts. An exclusive lease carries c's lock-delay.
func acquireIn(ctx context.Context, c workerClient, pool *pgxpool.Pool, key, owner string, m holdMode, wait bool) (locker.Lease, error) {
	req := locker.Request{Keys: []locker.Key{{Name: key, Mode: m.mode, Permits: m.permits}}, Owner: owner}
	if m.exclusive() {
		req.LockDelay = c.delay
	}
	if wait {
		req.Wait = locker.WaitForever
	}
	return one(c.Acquire(ctx, pool, req))
}

// one is the lease of a call on one key.
func one(leases []locker.Lease, err error) (locker.Lease, error) {
	if err != nil {
		return locker.Lease{}, err
	}
	return leases[0], nil
}

// forceHolder is the operator's force on one holder of key, whose row
// (group) holds it shared or as a semaphore: it reads the key's running
// leases and force-expires (or, one time in four, force-releases) one of
// them with its own token, as the console's operator acts on the holder it
// picked.
func (w Workload) forceHolder(ctx context.Context, pool *pgxpool.Pool, oper operator.Operator, rec *history.Recorder,
	r *rand.Rand, key string) {
	holders, err := lockview.HoldersOf(ctx, pool, []string{key})
	if err != nil || len(holders[key]) == 0 {
		return // the holders ended meanwhile
	}
	h := holders[key][r.IntN(len(holders[key]))]
	op := history.Op{Client: -1, Kind: history.ForceExpire, Key: key, Token: h.Token, Call: rec.Now()}
	if r.IntN(4) != 0 {
		_, err = oper.ForceExpire(ctx, pool, key, h.Token)
	} else {
		op.Kind = history.ForceRelease
		_, err = oper.ForceRelease(ctx, pool, key, h.Token)
	}
	op.Return = rec.Now()
	op.Result, op.Err = history.ResultOf(err)
	rec.Add(op)
}
