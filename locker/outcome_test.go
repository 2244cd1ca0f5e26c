package locker_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/lockctl/lockctl/internal/lockdb"
	"github.com/lockctl/lockctl/internal/testdb"
	"github.com/lockctl/lockctl/locker"
	"github.com/lockctl/lockctl/store"
)

// endsAfterSend is a DBTX that ends the caller's context the moment a
// statement has been sent: the caller gives up while its statement runs.
type endsAfterSend struct {
	locker.DBTX
	cancel context.CancelFunc
}

func (d endsAfterSend) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	row := d.DBTX.QueryRow(ctx, sql, args...)
	d.cancel()
	return row
}

// A grant that commits as its caller gives up is handed back, not left
// holding the key until its TTL with nobody knowing the token.
func TestAcquireGivenUpMidStatementLeavesTheKeyFree(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	lk := testdb.Locker(t, locker.Config{TTL: time.Hour})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	_, err := testdb.Try(ctx, lk, endsAfterSend{DBTX: db, cancel: cancel}, "job", "a")
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("TryAcquire given up mid-statement = %v; want context.Canceled", err)
	}
	info, found, err := store.Get[lockdb.LockInfo](context.Background(), db, "job")
	if err != nil {
		t.Fatal(err)
	}
	if found && info.State() != lockdb.StateFree {
		t.Fatalf("after the caller gave up, %q is %s by %q (token %d); want it free", "job", info.State(), info.Owner, info.Token)
	}
	if _, err := testdb.Try(context.Background(), lk, db, "job", "b"); err != nil {
		t.Fatalf("another owner cannot take the key the first gave up: %v", err)
	}
}
