package faults

import (
	"context"
	"math/rand/v2"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/lockctl/lockctl/internal/lockview"
	"github.com/lockctl/lockctl/internal/pgtemp"
	"github.com/lockctl/lockctl/internal/testdb"
	"github.com/lockctl/lockctl/locker"
)

// TestZombieWrite plays the zombie case step by step: A holds k, stalls
// (its keepalive cannot reach the database) past its TTL, B steals k and
// writes, then A resumes and writes with its old lease. With the fence, A's
// write is refused and reported; without it, it commits and the checker
// reports overlapping leases.
func TestZombieWrite(t *testing.T) {
	t.Parallel()
	if _, err := pgtemp.FindBinDir(); err != nil {
		testdb.Unavailable(t, "%v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	inst, err := pgtemp.Start(ctx, pgtemp.Options{Fast: true, HandleSignals: true,
		Settings: map[string]string{"track_commit_timestamp": "on"}})
	if err != nil {
		t.Fatal(err)
	}
	defer inst.Close()
	if err := setup(ctx, inst.DSN(""), Config{HotKeys: 2}); err != nil {
		t.Fatal(err)
	}

	for _, unsafe := range []bool{false, true} {
		name := map[bool]string{false: "fenced", true: "unfenced"}[unsafe]
		t.Run(name, func(t *testing.T) {
			key := map[bool]string{false: "hot-0", true: "hot-1"}[unsafe]
			rec := NewRecorder()
			var opSeq atomic.Int64
			opSeq.Store(map[bool]int64{false: 0, true: 1000}[unsafe])
			lk, err := locker.New(locker.Config{TTL: 300 * time.Millisecond, Actor: "zombie-test", LogGrants: true})
			if err != nil {
				t.Fatal(err)
			}
			newWorker := func(id int) *worker {
				w := &worker{id: id, rng: rand.New(rand.NewPCG(1, uint64(id))), lk: lk, ttl: 300 * time.Millisecond, unsafe: unsafe, rec: rec, opSeq: &opSeq}
				for _, dst := range []**pgxpool.Pool{&w.acq, &w.write} {
					p, err := workerPool(ctx, inst.DSN(""), name, 2, func() int64 { return 0 })
					if err != nil {
						t.Fatal(err)
					}
					t.Cleanup(p.Close)
					*dst = p
				}
				w.ka = &frozenDB{db: w.acq}
				return w
			}
			a, b := newWorker(1), newWorker(2)

			leaseA, err := lk.TryAcquire(ctx, a.acq, key, name+"-A")
			if err != nil {
				t.Fatal(err)
			}
			rec.grant(GrantRecord{Worker: 1, Key: key, Owner: leaseA.Owner, Token: leaseA.Token})
			a.ka.freezeFor(time.Second) // A's process stalls; so does its keepalive's network
			ka := lk.Keepalive(ctx, a.ka, leaseA)
			defer ka.Stop()
			select {
			case <-ka.Context().Done():
			case <-time.After(2 * time.Second):
				t.Fatal("A's keepalive was not cancelled while it could not renew")
			}

			actx, acancel := context.WithTimeout(ctx, 2*time.Second)
			leaseB, err := lk.Acquire(actx, b.acq, key, name+"-B") // waits for A's expiry
			acancel()
			if err != nil || leaseB.Outcome != locker.Stolen {
				t.Fatalf("B's acquire = %+v, %v; want stolen", leaseB, err)
			}
			rec.grant(GrantRecord{Worker: 2, Key: key, Owner: leaseB.Owner, Token: leaseB.Token})
			b.fencedWrite(ctx, leaseB)

			a.fencedWrite(ctx, leaseA) // the zombie resumes

			conn, err := pgx.Connect(ctx, inst.DSN(""))
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close(ctx)
			report, err := LoadAndCheck(ctx, conn, rec)
			if err != nil {
				t.Fatal(err)
			}
			_, _, writes := rec.snapshot()
			if !unsafe {
				if writes[0].Result != Committed || writes[1].Result != RolledBack {
					t.Fatalf("results B=%d A=%d; want B committed, A rolled back", writes[0].Result, writes[1].Result)
				}
				if rec.Observed()["write_not_held"] != 1 {
					t.Fatalf("A's write was not refused as not held: %v", rec.Observed())
				}
				ev, err := lockview.KeyEvents(ctx, conn, key, 1)
				if err != nil || len(ev) != 1 || ev[0].Kind != lockview.EventStaleWriteRejected || *ev[0].Token != leaseA.Token {
					t.Fatalf("latest event = %+v, %v; want A's stale write reported", ev, err)
				}
				// This subtest runs first, on an empty table.
				for _, v := range report.Violations {
					t.Errorf("violation: %s", v)
				}
				return
			}
			var overlap bool
			for _, v := range report.Violations {
				overlap = overlap || strings.Contains(v, "overlapping leases")
			}
			if !overlap {
				t.Fatalf("unfenced zombie write not reported as overlapping leases: %q", report.Violations)
			}
		})
	}
}
