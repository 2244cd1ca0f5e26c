package pgtemp

import (
	"context"
	"reflect"
	"testing"

	"github.com/jackc/pgx/v5"
)

// startPair starts a primary with a table "acked" holding row 1, and a
// standby that has replayed it, synchronous if sync.
func startPair(t *testing.T, sync bool) (primary, standby *Instance) {
	t.Helper()
	ctx := context.Background()
	primary = startServer(t)
	run(t, primary, `CREATE TABLE acked (id int PRIMARY KEY); INSERT INTO acked VALUES (1)`)
	standby, err := StartStandby(ctx, primary, Options{Fast: true, HandleSignals: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = standby.Close() })
	if sync {
		if err := standby.SetSynchronous(ctx, true); err != nil {
			t.Fatal(err)
		}
	}
	if err := WaitReplayed(ctx, primary, standby); err != nil {
		t.Fatal(err)
	}
	return primary, standby
}

func run(t *testing.T, in *Instance, sql string) {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, in.DSN(""))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, sql); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

func ackedRows(t *testing.T, in *Instance) []int {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, in.DSN(""))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	rows, _ := conn.Query(ctx, `SELECT id FROM acked ORDER BY id`)
	ids, err := pgx.CollectRows(rows, pgx.RowTo[int])
	if err != nil {
		t.Fatal(err)
	}
	return ids
}

// role reads whether in is primary and its timeline.
func role(t *testing.T, in *Instance) (bool, uint32) {
	t.Helper()
	ctx := context.Background()
	primary, err := in.IsPrimary(ctx)
	if err != nil {
		t.Fatal(err)
	}
	tli, err := in.Timeline(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return primary, tli
}

// failOver crashes primary and promotes standby, checking the roles and
// that the timeline rose by one.
func failOver(t *testing.T, primary, standby *Instance) {
	t.Helper()
	isPrimary, tli := role(t, standby)
	if isPrimary {
		t.Fatal("the standby says it is a primary before promotion")
	}
	if err := primary.Crash(); err != nil {
		t.Fatal(err)
	}
	if err := standby.Promote(context.Background()); err != nil {
		t.Fatal(err)
	}
	isPrimary, after := role(t, standby)
	if !isPrimary || after != tli+1 {
		t.Fatalf("after promotion: primary %v on timeline %d; want primary on timeline %d", isPrimary, after, tli+1)
	}
}

func TestAsyncFailoverLosesWhatTheStandbyNeverGot(t *testing.T) {
	requireServer(t)
	primary, standby := startPair(t, false)
	if isPrimary, tli := role(t, primary); !isPrimary || tli != 1 {
		t.Fatalf("fresh primary: primary %v on timeline %d, want a primary on timeline 1", isPrimary, tli)
	}
	if err := standby.PauseWALSender(context.Background()); err != nil {
		t.Fatal(err)
	}
	run(t, primary, `INSERT INTO acked VALUES (2)`) // acknowledged: the primary does not wait
	failOver(t, primary, standby)
	if got := ackedRows(t, standby); !reflect.DeepEqual(got, []int{1}) {
		t.Fatalf("promoted standby has rows %v; want [1]: row 2 was committed after its WAL sender stopped", got)
	}
}

func TestSyncStandbyKeepsAcknowledgedCommits(t *testing.T) {
	requireServer(t)
	ctx := context.Background()
	primary, standby := startPair(t, true)
	if err := standby.PauseWALSender(ctx); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		conn, err := pgx.Connect(ctx, primary.DSN(""))
		if err == nil {
			_, err = conn.Exec(ctx, `INSERT INTO acked VALUES (2)`)
			conn.Close(ctx)
		}
		done <- err
	}()
	// The commit waits for the standby, which cannot receive it.
	observer, err := pgx.Connect(ctx, primary.DSN(""))
	if err != nil {
		t.Fatal(err)
	}
	defer observer.Close(ctx)
	err = poll(ctx, "the insert to wait for the standby", func(ctx context.Context) (bool, error) {
		var waiting bool
		err := observer.QueryRow(ctx, `SELECT EXISTS (SELECT FROM pg_stat_activity
			WHERE wait_event = 'SyncRep' AND query LIKE 'INSERT INTO acked%')`).Scan(&waiting)
		return waiting, err
	})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		t.Fatalf("the commit returned (%v) while the synchronous standby could not receive it", err)
	default:
	}
	if err := standby.ResumeWALSender(); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	failOver(t, primary, standby)
	if got := ackedRows(t, standby); !reflect.DeepEqual(got, []int{1, 2}) {
		t.Fatalf("promoted standby has rows %v; want [1 2]: row 2 was acknowledged by a synchronous primary", got)
	}
	// The promoted server does not wait for a standby of its own: the
	// setting stayed on the old primary.
	run(t, standby, `INSERT INTO acked VALUES (3)`)
}

func TestMultiHostDSNFindsThePrimary(t *testing.T) {
	requireServer(t)
	ctx := context.Background()
	primary, standby := startPair(t, false)
	dsn := MultiHostDSN("", standby, primary) // the standby first: skipped while read-only
	serverPort := func() int {
		t.Helper()
		conn, err := pgx.Connect(ctx, dsn)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close(ctx)
		var port int
		if err := conn.QueryRow(ctx, `SELECT inet_server_port()`).Scan(&port); err != nil {
			t.Fatal(err)
		}
		return port
	}
	if got := serverPort(); got != primary.port {
		t.Fatalf("before failover the DSN reached port %d; want the primary's %d", got, primary.port)
	}
	failOver(t, primary, standby)
	if got := serverPort(); got != standby.port {
		t.Fatalf("after failover the DSN reached port %d; want the promoted standby's %d", got, standby.port)
	}
}

func TestMultiHostDSNQuotesTheDatabase(t *testing.T) {
	a, b := &Instance{port: 5501}, &Instance{port: 5502}
	cfg, err := pgx.ParseConfig(MultiHostDSN(`it's a\db`, a, b))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Database != `it's a\db` || cfg.Port != 5501 || len(cfg.Fallbacks) != 1 || cfg.Fallbacks[0].Port != 5502 {
		t.Fatalf("parsed database %q, port %d, fallbacks %d", cfg.Database, cfg.Port, len(cfg.Fallbacks))
	}
}
