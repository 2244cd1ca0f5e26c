package faults_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/lockctl/lockctl/internal/lockdb"
	"github.com/lockctl/lockctl/internal/lockview"
	"github.com/lockctl/lockctl/internal/pgtemp"
	"github.com/lockctl/lockctl/internal/testdb"
	"github.com/lockctl/lockctl/locker"
	"github.com/lockctl/lockctl/store"
)

func startServer(t *testing.T, ctx context.Context) *pgtemp.Instance {
	t.Helper()
	needServer(t)
	in, err := pgtemp.Start(ctx, pgtemp.Options{Fast: true, HandleSignals: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = in.Close() })
	return in
}

func pool(t *testing.T, ctx context.Context, dsn string) *pgxpool.Pool {
	t.Helper()
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		t.Fatal(err)
	}
	cfg.ConnConfig.ConnectTimeout = 2 * time.Second
	p, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	return p
}

func wantErr(t *testing.T, what string, err, sentinel error, says string) {
	t.Helper()
	if !errors.Is(err, sentinel) {
		t.Errorf("%s: err = %v; want %v", what, err, sentinel)
		return
	}
	if !strings.Contains(err.Error(), says) {
		t.Errorf("%s: message %q does not say %q", what, err, says)
	}
}

// TestErrorsFromARealServer provokes, for real, each database condition the
// locker reports with a meaning, and checks errors.Is against the sentinel
// through the locker API.
func TestErrorsFromARealServer(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	primary := startServer(t, ctx)
	db := pool(t, ctx, primary.DSN(""))
	if err := store.Migrate(ctx, db); err != nil {
		t.Fatal(err)
	}
	lk, err := locker.New(locker.Config{TTL: time.Minute, Actor: "tester"})
	if err != nil {
		t.Fatal(err)
	}
	lease, err := testdb.Try(ctx, lk, db, "k", "owner")
	if err != nil {
		t.Fatal(err)
	}

	t.Run("not migrated", func(t *testing.T) {
		if _, err := db.Exec(ctx, `CREATE DATABASE unmigrated`); err != nil {
			t.Fatal(err)
		}
		empty := pool(t, ctx, primary.DSN("unmigrated"))
		_, err := testdb.Try(ctx, lk, empty, "k", "owner")
		wantErr(t, "TryAcquire", err, locker.ErrNotMigrated, "lockctl migrate")
		_, err = lockview.ListPrefix(ctx, empty, "")
		wantErr(t, "ListPrefix", err, locker.ErrNotMigrated, "lockctl migrate")
	})

	t.Run("standby", func(t *testing.T) {
		standby, err := pgtemp.StartStandby(ctx, primary, pgtemp.Options{Fast: true, HandleSignals: true})
		if err != nil {
			t.Fatal(err)
		}
		defer standby.Close()
		if err := pgtemp.WaitReplayed(ctx, primary, standby); err != nil {
			t.Fatal(err)
		}
		sdb := pool(t, ctx, standby.DSN(""))
		var inRecovery bool
		if err := sdb.QueryRow(ctx, `SELECT pg_is_in_recovery()`).Scan(&inRecovery); err != nil || !inRecovery {
			t.Fatalf("pg_is_in_recovery() = %v, %v; want a standby", inRecovery, err)
		}
		// Reads work and see the primary's lock.
		row, found, err := store.Get[lockdb.LockInfo](ctx, sdb, "k")
		if err != nil || !found || row.Token != lease.Token {
			t.Fatalf("read on standby = %+v, %v, %v; want the primary's lock", row, found, err)
		}
		// Every write is refused as read-only.
		_, err = testdb.Try(ctx, lk, sdb, "k2", "owner")
		wantErr(t, "TryAcquire", err, locker.ErrReadOnly, "read-only")
		_, err = testdb.One(lk.Renew(ctx, sdb, lease))
		wantErr(t, "Renew", err, locker.ErrReadOnly, "read-only")
		_, err = testdb.One(lk.Release(ctx, sdb, lease))
		wantErr(t, "Release", err, locker.ErrReadOnly, "read-only")
		_, err = testdb.Operator(t, "tester").ForceExpire(ctx, sdb, "k", lease.Token)
		wantErr(t, "ForceExpire", err, locker.ErrReadOnly, "read-only")
		err = lk.ReportStaleWrite(ctx, sdb, lease, "x")
		wantErr(t, "ReportStaleWrite", err, locker.ErrReadOnly, "read-only")
		err = pgx.BeginFunc(ctx, sdb, func(tx pgx.Tx) error { return locker.Fence(ctx, tx, lease) })
		wantErr(t, "Fence", err, locker.ErrReadOnly, "read-only")
		_, err = testdb.Wait(ctx, lk, sdb, "k", "other")
		wantErr(t, "Acquire (waiting)", err, locker.ErrReadOnly, "read-only")
	})

	t.Run("statement and lock timeouts", func(t *testing.T) {
		// A competing transaction holds the lock row.
		blocker, err := db.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer blocker.Rollback(ctx)
		if _, err := blocker.Exec(ctx, `SELECT 1 FROM distributed_lock WHERE lock_key = 'k' FOR UPDATE`); err != nil {
			t.Fatal(err)
		}
		for _, c := range []struct {
			setting  string
			sentinel error
			says     string
		}{
			{"statement_timeout", locker.ErrStatementTimeout, "statement cancelled"},
			{"lock_timeout", lockdb.ErrLockTimeout, "timed out waiting for a database lock"},
		} {
			conn, err := db.Acquire(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := conn.Exec(ctx, `SELECT set_config($1, '100ms', false)`, c.setting); err != nil {
				t.Fatal(err)
			}
			_, err = testdb.One(lk.Renew(ctx, conn, lease))
			wantErr(t, c.setting+": Renew", err, c.sentinel, c.says)
			err = pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error { return locker.Fence(ctx, tx, lease) })
			wantErr(t, c.setting+": Fence", err, c.sentinel, c.says)
			// Do not return a connection with the setting to the pool.
			_ = conn.Hijack().Close(ctx)
		}
	})

	t.Run("terminated connection", func(t *testing.T) {
		conn, err := pgx.Connect(ctx, primary.DSN(""))
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close(ctx)
		if _, err := db.Exec(ctx, `SELECT pg_terminate_backend($1)`, conn.PgConn().PID()); err != nil {
			t.Fatal(err)
		}
		_, err = testdb.Try(ctx, lk, conn, "k3", "owner")
		wantErr(t, "TryAcquire on a terminated connection", err, locker.ErrUnavailable, "unreachable")
	})

	t.Run("server crash mid-statement", func(t *testing.T) {
		blocker, err := db.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := blocker.Exec(ctx, `SELECT 1 FROM distributed_lock WHERE lock_key = 'k' FOR UPDATE`); err != nil {
			t.Fatal(err)
		}
		conn, err := pgx.Connect(ctx, primary.DSN(""))
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close(ctx)
		res := make(chan error, 1)
		go func() { _, err := testdb.One(lk.Renew(ctx, conn, lease)); res <- err }()
		testdb.WaitUntilBlocked(t, db, conn.PgConn().PID()) // the renewal waits for the row
		if err := primary.Stop(pgtemp.Immediate); err != nil {
			t.Fatal(err)
		}
		wantErr(t, "Renew cut off by a crash", <-res, locker.ErrUnavailable, "unreachable")
		_ = blocker.Rollback(ctx)
		if err := primary.Start(ctx); err != nil {
			t.Fatal(err)
		}
		db.Reset()
	})

	t.Run("server stopped", func(t *testing.T) {
		if err := primary.Stop(pgtemp.Fast); err != nil {
			t.Fatal(err)
		}
		db.Reset()
		_, err := testdb.Try(ctx, lk, db, "k", "owner")
		wantErr(t, "TryAcquire", err, locker.ErrUnavailable, "unreachable")
		_, err = lockview.ListPrefix(ctx, db, "")
		wantErr(t, "ListPrefix", err, locker.ErrUnavailable, "unreachable")
	})
}
