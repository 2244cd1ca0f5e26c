package demo

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"
)

// Keys and owners of the fixed cast. Hot keys are hotKey(i).
const (
	keyScheduler = "scheduler:leader"
	keyMailer    = "mailer:leader"
	keyLedger    = "ledger:balance"
	keyStuck     = "reports:stuck"
	keyBackup    = "backup:nightly"

	keyInventoryEU = "inventory:eu"
	keyInventoryUS = "inventory:us"

	keyReportPool = "reports:pool"   // a semaphore of reportPermits permits
	keyPricing    = "config:pricing" // shared by its readers, exclusive to its writer

	ownerReportGen   = "report-gen"
	ownerReportRetry = "report-retry"
	ownerBackup      = "backup-1"
	ownerStandby     = "backup-2"
	ownerSyncEU      = "sync-eu"
	ownerSyncUS      = "sync-us"
	ownerPricing     = "pricing-admin"
)

// tellers is how many single-account workers contend with the transfer.
const tellers = 2

// reportWorkers contend for the reportPermits permits of keyReportPool;
// pricingReaders share keyPricing.
const (
	reportWorkers  = 5
	reportPermits  = 3
	pricingReaders = 3
)

func hotKey(i int) string { return fmt.Sprintf("orders:shard-%d", i) }

// Lease lengths of the story at speed 1 (Config.Speed scales them).
const (
	leaderTTL = 15 * time.Second
	hotTTL    = 6 * time.Second
	ledgerTTL = 4 * time.Second
	reportTTL = 10 * time.Second
	// accountTTL is the lease of the transfer and the tellers.
	accountTTL = 6 * time.Second
	// backupTTL and backupDelay: the crashed backup's lease runs out within
	// backupTTL, then its key sits out backupDelay.
	backupTTL   = 5 * time.Second
	backupDelay = 10 * time.Second
	// inventoryTTL is the syncers' lease, renewed while they hold and wait.
	inventoryTTL = 8 * time.Second
	// reportPoolTTL is a report worker's permit; pricingTTL the pricing
	// readers' and writer's leases.
	reportPoolTTL = 6 * time.Second
	pricingTTL    = 6 * time.Second
)

// cast lists every worker of the story as a function that runs until ctx
// ends.
func (s *Sim) cast() []func(context.Context) {
	var scenes []func(context.Context)
	for i, who := range []string{"scheduler-a", "scheduler-b"} {
		scenes = append(scenes, func(ctx context.Context) { s.leader(ctx, keyScheduler, who, i) })
	}
	scenes = append(scenes, func(ctx context.Context) { s.leader(ctx, keyMailer, "mailer-a", 2) })
	for i := range s.cfg.Workers {
		scenes = append(scenes, func(ctx context.Context) { s.contender(ctx, i) })
	}
	for i, who := range []string{"ledger-a", "ledger-b"} {
		scenes = append(scenes, func(ctx context.Context) { s.ledgerWriter(ctx, who, i) })
	}
	hung, done := make(chan struct{}), make(chan struct{})
	scenes = append(scenes,
		func(ctx context.Context) { s.reportGen(ctx, hung, done) },
		func(ctx context.Context) { s.reportRetry(ctx, hung, done) })
	scenes = append(scenes, func(ctx context.Context) { s.transfer(ctx, 0) })
	for i := range tellers {
		scenes = append(scenes, func(ctx context.Context) { s.teller(ctx, i) })
	}
	backupHeld, backupDone := make(chan struct{}), make(chan struct{})
	scenes = append(scenes,
		func(ctx context.Context) { s.backupRunner(ctx, backupHeld, backupDone) },
		func(ctx context.Context) { s.backupStandby(ctx, backupHeld, backupDone) },
		s.inventorySync)
	for i := range reportWorkers {
		scenes = append(scenes, func(ctx context.Context) { s.reportWorker(ctx, i) })
	}
	for i := range pricingReaders {
		scenes = append(scenes, func(ctx context.Context) { s.pricingReader(ctx, i) })
	}
	scenes = append(scenes, s.pricingWriter)
	return scenes
}

// leader holds key for a long tenure with a Keepalive, then steps down (a
// deploy, say) and queues again behind whoever took over. With a standby
// waiting, the hand-off is immediate: the release NOTIFYs it.
func (s *Sim) leader(ctx context.Context, key, owner string, index int) {
	r := s.rng(roleLeader, index)
	lk := s.storyLocker(leaderTTL, "leader election")
	for ctx.Err() == nil {
		tenure := s.between(r, 25*time.Second, 50*time.Second)
		rest := s.between(r, 1*time.Second, 3*time.Second)
		lease, err := s.take(ctx, lk, key, owner)
		if err != nil {
			continue
		}
		if kept, lost := s.holdFor(ctx, lk, lease, tenure); !lost {
			s.give(ctx, lk, kept)
		}
		sleep(ctx, rest)
	}
}

// contender loops: idle, queue for a random hot key, work while renewing,
// release. Sometimes it crashes instead: renewals stop, the key is not
// released, and the worker comes back later under a new owner id, as a
// restarted process would (reusing the old id could adopt the dead
// process's lease).
func (s *Sim) contender(ctx context.Context, index int) {
	r := s.rng(roleContender, index)
	lk := s.storyLocker(hotTTL, "order worker")
	life := 1
	for ctx.Err() == nil {
		j := s.nextJob(r)
		owner := fmt.Sprintf("worker-%02d", index+1)
		if life > 1 {
			owner = fmt.Sprintf("%s#%d", owner, life)
		}
		if !sleep(ctx, j.idle) {
			return
		}
		lease, err := s.take(ctx, lk, j.key, owner)
		if err != nil {
			continue
		}
		if j.crash {
			// Work a while, then die holding the key: the Keepalive goes
			// with the process, and the lease runs out.
			if _, lost := s.holdFor(ctx, lk, lease, j.work/2); lost || ctx.Err() != nil {
				continue
			}
			s.stats.crashes.Add(1)
			life++
			if sleep(ctx, j.offline) {
				// Longer offline than the TTL: the lease is gone by now,
				// and nothing is left for Stop to give back.
				s.holding.drop(lease)
			}
			continue
		}
		if kept, lost := s.holdFor(ctx, lk, lease, j.work); !lost {
			s.give(ctx, lk, kept)
		}
	}
}

// job is one round of a contender, drawn before it starts so the sequence
// of choices depends only on the seed.
type job struct {
	idle, work, offline time.Duration
	key                 string
	crash               bool
}

func (s *Sim) nextJob(r *rand.Rand) job {
	return job{
		idle:    s.between(r, 300*time.Millisecond, 2*time.Second),
		key:     hotKey(r.IntN(s.cfg.HotKeys)),
		work:    s.between(r, 1500*time.Millisecond, 4500*time.Millisecond),
		crash:   r.Float64() < s.cfg.CrashChance,
		offline: s.between(r, hotTTL+time.Second, hotTTL+6*time.Second),
	}
}
