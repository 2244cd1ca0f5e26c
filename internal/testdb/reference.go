package testdb

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/lockctl/lockctl/store"
)

// ReferenceTableSQL is the reference service's DDL (the Java/Spring
// DistributedLockService lockctl started from): four columns, expires_at
// without a time zone.
const ReferenceTableSQL = `CREATE TABLE distributed_lock (
    lock_key    varchar(255) PRIMARY KEY,
    owner_id    varchar(255),
    fence_token bigint,
    expires_at  timestamp
)`

// ReferenceLock is one row as the reference service writes it.
type ReferenceLock struct {
	Key, Owner string
	Token      int64 // the reference's System.currentTimeMillis()
	// ExpiresAt is the instant the lease ends; the row holds it as the
	// JVM's LocalDateTime, the wall time in the JVM's zone.
	ExpiresAt time.Time
}

// insertReferenceSQL binds expires_at as text cast to timestamp: a LocalDateTime
// reaches the column as wall-clock digits, with no zone.
const insertReferenceSQL = `INSERT INTO distributed_lock (lock_key, owner_id, fence_token, expires_at)
VALUES ($1, $2, $3, $4::timestamp)`

// ReferencePool is a pool on a fresh, unmigrated schema holding the reference
// service's table, empty (InsertReference fills it). Its DSN is returned too,
// for tests that run the binary.
func ReferencePool(t testing.TB) (*pgxpool.Pool, string) {
	t.Helper()
	dsn := EmptyDSN(t)
	db := Pool(t, dsn)
	if _, err := db.Exec(context.Background(), ReferenceTableSQL); err != nil {
		t.Fatalf("create the reference table: %v", err)
	}
	return db, dsn
}

// InsertReference writes locks as the reference service running in a JVM in
// jvmZone writes them.
func InsertReference(t testing.TB, db store.DBTX, jvmZone *time.Location, locks ...ReferenceLock) {
	t.Helper()
	for _, l := range locks {
		wall := l.ExpiresAt.In(jvmZone).Format("2006-01-02 15:04:05.999999")
		if _, err := db.Exec(context.Background(), insertReferenceSQL, l.Key, l.Owner, l.Token, wall); err != nil {
			t.Fatalf("insert reference row %q: %v", l.Key, err)
		}
	}
}

// DBNow is the server's own clock, clock_timestamp(), for leases built on
// the database's clock rather than this process's. It reads no schema (a
// reference table's has no distributed_lock_now): a schema whose Clock a
// test moved is read with that Clock's Now.
func DBNow(t testing.TB, db store.DBTX) time.Time {
	t.Helper()
	var now time.Time
	if err := db.QueryRow(context.Background(), `SELECT clock_timestamp()`).Scan(&now); err != nil {
		t.Fatalf("read the database clock: %v", err)
	}
	return now
}
