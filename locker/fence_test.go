package locker_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/lockctl/lockctl/internal/lockdb"
	"github.com/lockctl/lockctl/internal/testdb"
	"github.com/lockctl/lockctl/locker"
)

const (
	reportTableSQL   = `CREATE TABLE report (lock_key text NOT NULL, token bigint NOT NULL, writer text NOT NULL)`
	reportWriteSQL   = `INSERT INTO report (lock_key, token, writer) VALUES ($1, $2, $3)`
	reportWritersSQL = `SELECT writer FROM report ORDER BY writer`
	dbNowSQL         = `SELECT clock_timestamp()`
)

func reportWriters(t *testing.T, db locker.DBTX) []string {
	t.Helper()
	rows, err := db.Query(context.Background(), reportWritersSQL)
	if err != nil {
		t.Fatal(err)
	}
	writers, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	return writers
}

// A holder whose lease was stolen (a zombie after a long pause) cannot
// commit a fenced write; the current holder can.
func TestFenceRejectsZombieWrite(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, lk, zombie, holder := stolenSetup(t, false)
	if _, err := db.Exec(ctx, reportTableSQL); err != nil {
		t.Fatal(err)
	}

	// The zombie writes, then proves its lease before committing.
	tx, err := db.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, reportWriteSQL, "k", zombie.Token, "a"); err != nil {
		t.Fatal(err)
	}
	err = locker.Fence(ctx, tx, zombie)
	nh := notHeldErr(t, "zombie's fence", err)
	if nh.Current == nil || nh.Current.Owner != "b" || nh.Current.Token != holder.Token {
		t.Fatalf("Current = %+v; want b's grant %d", nh.Current, holder.Token)
	}
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	if err := lk.ReportStaleWrite(ctx, db, zombie, "report"); err != nil {
		t.Fatal(err)
	}

	// The holder's fenced write commits.
	err = pgx.BeginFunc(ctx, db, func(tx pgx.Tx) error {
		if err := locker.Fence(ctx, tx, holder); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, reportWriteSQL, "k", holder.Token, "b")
		return err
	})
	if err != nil {
		t.Fatalf("holder's fenced write: %v", err)
	}
	if got := reportWriters(t, db); len(got) != 1 || got[0] != "b" {
		t.Fatalf("committed writers = %v; want only the holder b", got)
	}
	ev := eventsOf(t, db, "k")[0]
	if ev.Kind != lockdb.EventStaleWriteRejected || *ev.Token != zombie.Token || ev.Detail["resource"] != "report" {
		t.Fatalf("latest event = %+v; want stale_write_rejected for token %d on report", ev, zombie.Token)
	}
}

// A fence outside a transaction, or on an expired lease, proves nothing and
// is refused; a fence on a released lease too.
func TestFenceRefusesExpiredAndReleased(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.New(t)
	lk := testdb.Locker(t, locker.Config{TTL: time.Minute})
	expired := testdb.MustAcquire(t, lk, db, "e", "a")
	testdb.ExpireLease(t, db, "e")
	released := testdb.MustAcquire(t, lk, db, "r", "a")
	if _, err := testdb.One(lk.Release(ctx, db, released)); err != nil {
		t.Fatal(err)
	}
	for name, lease := range map[string]locker.Lease{"expired": expired, "released": released} {
		err := pgx.BeginFunc(ctx, db, func(tx pgx.Tx) error { return locker.Fence(ctx, tx, lease) })
		notHeldErr(t, "fence of an "+name+" lease", err)
	}
}

// While a holder's fenced transaction is open, its (now expired) lease
// cannot be stolen: TryAcquire refuses at once (it never waits for a row
// lock), a waiting Acquire takes the key only after the guarded write
// committed.
func TestStealWaitsForFencedTransaction(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.New(t)
	lk := testdb.Locker(t, locker.Config{TTL: 400 * time.Millisecond})
	if _, err := db.Exec(ctx, reportTableSQL); err != nil {
		t.Fatal(err)
	}
	holder := testdb.MustAcquire(t, lk, db, "k", "a")

	tx, err := db.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	if err := locker.Fence(ctx, tx, holder); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, reportWriteSQL, "k", holder.Token, "a"); err != nil {
		t.Fatal(err)
	}
	// The lease expires with the transaction open (its row is locked, so
	// only real time can do this).
	testdb.WaitUntilPast(t, db, holder.ExpiresAt)

	tryCtx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	if l, err := testdb.Try(tryCtx, lk, db, "k", "b"); !errors.Is(err, locker.ErrHeld) {
		t.Fatalf("TryAcquire while the fenced transaction is open = %+v, %v; want ErrHeld at once", l, err)
	} else if !strings.Contains(err.Error(), "busy") {
		t.Errorf("refusal %q does not say the key is busy", err)
	}
	stole := testdb.AcquireAsync(ctx, lk, db, "k", "b")
	select {
	case r := <-stole:
		t.Fatalf("steal returned while the fenced transaction was open: %+v, %v", r.Lease, r.Err)
	case <-time.After(300 * time.Millisecond):
	}
	var lastInTx time.Time
	if err := tx.QueryRow(ctx, dbNowSQL).Scan(&lastInTx); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatalf("the fenced write must commit: %v", err)
	}
	var r testdb.Acquired
	select {
	case r = <-stole:
	case <-time.After(10 * time.Second):
		t.Fatal("steal still waiting after the fenced transaction committed")
	}
	if r.Err != nil || r.Lease.Outcome != locker.Stolen || r.Lease.Token <= holder.Token {
		t.Fatalf("steal = %+v, %v; want stolen with a token above %d", r.Lease, r.Err, holder.Token)
	}
	if granted := r.Lease.ExpiresAt.Add(-r.Lease.TTL); granted.Before(lastInTx) {
		t.Fatalf("new grant at %s, before the fenced transaction's last statement at %s", granted, lastInTx)
	}
	if got := reportWriters(t, db); len(got) != 1 || got[0] != "a" {
		t.Fatalf("committed writers = %v; want the fenced write of a", got)
	}
	// And now the old holder's fence fails.
	err = pgx.BeginFunc(ctx, db, func(tx pgx.Tx) error { return locker.Fence(ctx, tx, holder) })
	if !errors.Is(err, locker.ErrNotHeld) {
		t.Fatalf("old holder's fence after the steal = %v; want ErrNotHeld", err)
	}
}
