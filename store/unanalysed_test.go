package store_test

import (
	"context"
	"testing"

	"github.com/lockctl/lockctl/internal/testdb"
)

// A call on one lease reads that lease's row by its key, whatever the
// planner knows of the table: on a table autovacuum has not analysed yet
// (a new deployment's, or any small one between analyses), a lease row
// joined to the call's own lookup was planned as a scan of every row, the
// lookup run again for each, so a renewal among 200 leases cost ten times
// a cycle. Scans are counted in the call's transaction
// (pg_stat_xact_user_tables).
func TestCallsOnOneLeaseScanNoTableWithoutStatistics(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.New(t)
	if _, err := db.Exec(ctx, `ALTER TABLE distributed_lock SET (autovacuum_enabled = false)`); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(ctx, `SELECT count(*) FROM generate_series(1, 200) g,
		LATERAL distributed_lock_acquire('k' || g, 'o', 60000000::bigint) a`); err != nil {
		t.Fatal(err)
	}
	var tuples float64
	if err := db.QueryRow(ctx, `SELECT reltuples FROM pg_class WHERE oid = 'distributed_lock'::regclass`).Scan(&tuples); err != nil || tuples >= 0 {
		t.Fatalf("reltuples %v, %v: the table has statistics, and the test needs it without", tuples, err)
	}
	for _, call := range []struct{ name, sql string }{
		{"renew", `SELECT outcome FROM distributed_lock_renew('k7', 'o', (SELECT fence_token FROM distributed_lock WHERE lock_key = 'k7'), 60000000)`},
		{"force-expire", `SELECT outcome FROM distributed_lock_force_expire('k8', (SELECT fence_token FROM distributed_lock WHERE lock_key = 'k8'))`},
		{"acquire", `SELECT outcome FROM distributed_lock_acquire('k9', 'o2', 60000000)`},
		{"acquire, renewed", `SELECT outcome FROM distributed_lock_acquire('k9', 'o', 60000000)`},
		{"release", `SELECT outcome FROM distributed_lock_release('k10', 'o', (SELECT fence_token FROM distributed_lock WHERE lock_key = 'k10'))`},
		{"fence", `SELECT distributed_lock_fence('k11', 'o', (SELECT fence_token FROM distributed_lock WHERE lock_key = 'k11'))::text`},
		{"revoke", `SELECT outcome FROM distributed_lock_revoke('k12', (SELECT fence_token FROM distributed_lock WHERE lock_key = 'k12'))`},
		{"force-release", `SELECT outcome FROM distributed_lock_force_release('k13', (SELECT fence_token FROM distributed_lock WHERE lock_key = 'k13'))`},
	} {
		tx, err := db.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var outcome string
		var scans, read int64
		err = tx.QueryRow(ctx, call.sql).Scan(&outcome)
		if err == nil {
			err = tx.QueryRow(ctx, `SELECT seq_scan, seq_tup_read FROM pg_stat_xact_user_tables
				WHERE relid = 'distributed_lock'::regclass`).Scan(&scans, &read)
		}
		_ = tx.Rollback(ctx)
		switch {
		case err != nil:
			t.Fatalf("%s: %v", call.name, err)
		case outcome == "not_held":
			t.Errorf("%s: not held; want the lease acted on", call.name)
		case scans != 0:
			t.Errorf("%s: %d scans of distributed_lock reading %d rows; want its row found by key", call.name, scans, read)
		}
	}
}
