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

	"github.com/lockctl/lockctl/internal/history"
	"github.com/lockctl/lockctl/internal/lockdb"
	"github.com/lockctl/lockctl/internal/lockview"
	"github.com/lockctl/lockctl/internal/pgtemp"
	"github.com/lockctl/lockctl/internal/testdb"
	"github.com/lockctl/lockctl/locker"
)

// TestZombieWrite plays the zombie case step by step: A holds k, stalls
// (its keepalive cannot reach the database) past its TTL, B steals k and
// writes, then A resumes and writes with its old lease. With the fence, A's
// write is refused and reported; without it, it commits and the checker
// reports a stale write.
func TestZombieWrite(t *testing.T) {
	t.Parallel()
	if _, err := pgtemp.FindBinDir(); err != nil {
		testdb.Unavailable(t, "%v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	inst, err := pgtemp.Start(ctx, pgtemp.Options{Fast: true, HandleSignals: true})
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
			rec, tally := history.NewRecorder(), newCounts()
			var opSeq atomic.Int64
			opSeq.Store(map[bool]int64{false: 0, true: 1000}[unsafe])
			// A's lease is short, to lapse soon; B's long enough that its
			// write after the steal is in time on a loaded machine.
			lk, err := locker.New(locker.Config{TTL: 300 * time.Millisecond, Actor: "zombie-test", LogGrants: true})
			if err != nil {
				t.Fatal(err)
			}
			lkB, err := locker.New(locker.Config{TTL: 5 * time.Second, Actor: "zombie-test", LogGrants: true})
			if err != nil {
				t.Fatal(err)
			}
			newWorker := func(id int, lk *locker.Locker, ttl time.Duration) *worker {
				w := &worker{id: id, rng: rand.New(rand.NewPCG(1, uint64(id))), lk: lk, ttl: ttl, unsafe: unsafe, rec: rec, counts: tally, opSeq: &opSeq}
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
			a, b := newWorker(1, lk, 300*time.Millisecond), newWorker(2, lkB, 5*time.Second)

			leaseA, err := a.grant(ctx, key, name+"-A", false)
			if err != nil {
				t.Fatal(err)
			}
			a.ka.freezeFor(time.Second) // A's process stalls; so does its keepalive's network
			ka := lk.Keepalive(ctx, a.ka, leaseA)
			defer ka.Stop()
			select {
			case <-ka.Context().Done():
			case <-time.After(2 * time.Second):
				t.Fatal("A's keepalive was not cancelled while it could not renew")
			}

			leaseB, err := b.grant(ctx, key, name+"-B", true) // waits for A's expiry
			if err != nil || leaseB.Outcome != locker.Stolen {
				t.Fatalf("B's acquire = %+v, %v; want stolen", leaseB, err)
			}
			resB := b.fencedWrite(ctx, leaseB)
			resA := a.fencedWrite(ctx, leaseA) // the zombie resumes

			conn, err := pgx.Connect(ctx, inst.DSN(""))
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close(ctx)
			obs, err := history.Observe(ctx, conn)
			if err != nil {
				t.Fatal(err)
			}
			report := history.Check(rec.Ops(), rec.LeaseEnds(), rec.VouchedLeases(), obs)
			if !unsafe {
				if resB != history.OK || resA != history.NotHeld {
					t.Fatalf("results B=%s A=%s; want B ok, A not held", resB, resA)
				}
				if tally.Observed()["write_not_held"] != 1 {
					t.Fatalf("A's write was not refused as not held: %v", tally.Observed())
				}
				ev, err := lockview.KeyEvents(ctx, conn, key, 1)
				if err != nil || len(ev) != 1 || ev[0].Kind != lockdb.EventStaleWriteRejected || *ev[0].Token != leaseA.Token {
					t.Fatalf("latest event = %+v, %v; want A's stale write reported", ev, err)
				}
				// This subtest runs first, on an empty table.
				for _, v := range report.Violations {
					t.Errorf("violation: %s", v)
				}
				return
			}
			if resA != history.OK {
				t.Fatalf("the unfenced zombie's write = %s; want it to commit", resA)
			}
			var stale bool
			for _, v := range report.Violations {
				stale = stale || strings.Contains(v, "stale write on \""+key+"\": \""+name+"-A\"")
			}
			if !stale {
				t.Fatalf("unfenced zombie write not reported as a stale write: %q", report.Violations)
			}
		})
	}
}
