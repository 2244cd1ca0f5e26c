package election_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/lockctl/lockctl/internal/history"
	"github.com/lockctl/lockctl/internal/operator"
	"github.com/lockctl/lockctl/internal/testdb"
	"github.com/lockctl/lockctl/internal/workload"
	"github.com/lockctl/lockctl/locker"
	"github.com/lockctl/lockctl/locker/election"
)

// Candidates campaign, lead for a moment and resign, while an operator now
// and then force-expires the leader (a leader that died, as far as the key
// is concerned) and observers watch. The history is checked as every lock
// history is (internal/history): no two leaders' leases overlap, terms
// grow; and no observer sees a term go back.
func TestElectionsKeepTheContract(t *testing.T) {
	db := testdb.New(t)
	n := workload.StartNotifier(t, db.Config().ConnConfig)
	lc := locker.Config{TTL: time.Second, RenewEvery: 200 * time.Millisecond, Notifier: n, LogGrants: true, WaitRecheck: time.Second}
	if err := history.CreateGuarded(context.Background(), db); err != nil {
		t.Fatal(err)
	}
	rec := history.NewRecorder()
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	var told sync.Map // terms whose candidates were told they won
	for id := range 4 {
		e, err := election.New(db, "leader", election.Config{Locker: lc, Owner: "candidate-" + string(rune('a'+id))})
		if err != nil {
			t.Fatal(err)
		}
		wg.Go(func() { campaignLoop(ctx, rec, e, id, &told) })
	}
	wg.Go(func() { deposeLoop(ctx, rec, db, &told) })
	var observed [2][]int64
	for i := range observed {
		o, err := election.New(db, "leader", election.Config{Recheck: time.Second, Listen: listenTo(db)})
		if err != nil {
			t.Fatal(err)
		}
		wg.Go(func() {
			for l := range o.Observe(ctx) {
				observed[i] = append(observed[i], l.Term)
			}
		})
	}
	wg.Wait()

	obs, err := history.Observe(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	report := history.Check(rec.Ops(), nil, nil, obs)
	report.LogViolations(t)
	t.Logf("%s", report.Stats)
	if !report.OK() {
		t.Fatalf("%d violations of the lock contract among the leaders", len(report.Violations))
	}
	granted := map[int64]bool{}
	leaders := 0
	for _, op := range rec.Ops() {
		if op.Kind == history.Grant && op.Result == history.OK {
			granted[op.Token] = true
			leaders++
		}
	}
	if leaders < 10 {
		t.Fatalf("only %d leaders elected: the history shows little", leaders)
	}
	for i, terms := range observed {
		if len(terms) == 0 {
			t.Fatalf("observer %d saw no leader", i)
		}
		for j, term := range terms {
			if j > 0 && term <= terms[j-1] {
				t.Fatalf("observer %d saw term %d after %d", i, term, terms[j-1])
			}
			if !granted[term] {
				t.Fatalf("observer %d saw term %d, which no candidate was told it won", i, term)
			}
		}
		t.Logf("observer %d saw %d of %d terms", i, len(terms), leaders)
	}
}

func campaignLoop(ctx context.Context, rec *history.Recorder, e *election.Election, id int, told *sync.Map) {
	r := rand.New(rand.NewPCG(uint64(id), 1))
	for ctx.Err() == nil {
		op := history.Op{Client: id, Kind: history.Grant, Key: "leader", Owner: e.Owner(), Call: rec.Now()}
		_, err := e.Campaign(ctx, "v")
		op.Return = rec.Now()
		lease, leads := e.Lease()
		op.Result, op.Err = history.GrantResultOf(err)
		if leads {
			op.Granted(lease)
			if err != nil { // won, then lost before its proclamation
				op.Result = history.Unknown
			}
		}
		rec.Add(op)
		if !leads {
			continue
		}
		told.Store(lease.Token, true)
		testdb.Pace(time.Duration(r.IntN(30)) * time.Millisecond) // the leader's work
		rel := history.Op{Client: id, Kind: history.Release, Key: "leader", Owner: e.Owner(), Token: lease.Token, Call: rec.Now()}
		err = e.Resign(context.WithoutCancel(ctx))
		rel.Return = rec.Now()
		rel.Result, rel.Err = history.ResultOf(errors.Unwrap(err))
		rec.Add(rel)
	}
}

// deposeLoop force-expires the leader now and then: one told it won (a
// lease handed to a candidate that has not claimed it yet is passed on
// unseen when forced, which no history could show).
func deposeLoop(ctx context.Context, rec *history.Recorder, db locker.DBTX, told *sync.Map) {
	for ctx.Err() == nil {
		testdb.Pace(150 * time.Millisecond) // an operator's pace
		l, err := election.Read(ctx, db, "leader")
		if _, ok := told.Load(l.Term); err != nil || !ok {
			continue
		}
		op := history.Op{Client: -1, Kind: history.ForceExpire, Key: "leader", Token: l.Term, Call: rec.Now()}
		_, err = operator.Operator{}.ForceExpire(context.WithoutCancel(ctx), db, "leader", l.Term)
		op.Return = rec.Now()
		op.Result, op.Err = history.ResultOf(err)
		rec.Add(op)
	}
}
