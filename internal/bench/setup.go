package bench

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/lockctl/lockctl/store"
)

// target is one run's private corner of a server: a schema of its own,
// holding lockctl's tables (from schema.sql) and the benchmark's own.
type target struct {
	dsn     string // as given, without the schema
	schema  string
	appName string        // marks the workers' backends for the lock-wait sampler
	pool    *pgxpool.Pool // sized for the largest concurrency; setup and keepalive use it
	rtt     time.Duration // waited before every statement of a worker (see roundTripCounter)
}

// benchTablesSQL creates what only the benchmark uses: the reference's
// table with its four columns and its token sequence, one row per worker
// for the commit floor, the upsert's table, and the function floor's table
// and functions (pinned to the run's schema). Created unqualified, in the run's schema.
var benchTablesSQL = `
CREATE TABLE reference_lock (
    lock_key    varchar(255) PRIMARY KEY,
    owner_id    varchar(255) NOT NULL,
    fence_token bigint       NOT NULL,
    expires_at  timestamp    NOT NULL
);
CREATE SEQUENCE reference_lock_seq;
CREATE TABLE bench_floor (id int PRIMARY KEY, n bigint NOT NULL DEFAULT 0);
` + upsertTableSQL + floorFuncSQL

const floorRowsSQL = `INSERT INTO bench_floor (id) SELECT generate_series(0, $1::int - 1)`

// errBehindPooler refuses a DSN through a connection pooler.
var errBehindPooler = errors.New("bench: --dsn goes through a connection pooler, which refuses the search_path that confines the run to a schema of its own: give the server's own address (BENCHMARKS.md, \"Through PgBouncer\", compares lock cycles through a pooler with direct ones)")

// openTarget makes a fresh schema on dsn's server, applies lockctl's schema
// (store.Migrate) and the benchmark's tables to it, and opens a pool of
// conns connections confined to it.
func openTarget(ctx context.Context, dsn string, conns int) (*target, error) {
	return openTargetRTT(ctx, dsn, conns, 0)
}

// openTargetRTT is openTarget whose pool waits rtt before every statement
// (see roundTripCounter).
func openTargetRTT(ctx context.Context, dsn string, conns int, rtt time.Duration) (*target, error) {
	t := &target{dsn: dsn, schema: fmt.Sprintf("lockctl_bench_%d_%d", os.Getpid(), time.Now().UnixNano()%1_000_000_000), rtt: rtt}
	t.appName = t.schema
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return nil, fmt.Errorf("bench: connect: %w", store.Interpret(err))
	}
	defer conn.Close(ctx)
	if pooled, err := store.BehindPooler(ctx, conn); err == nil && pooled {
		return nil, errBehindPooler
	}
	// DDL takes no bound parameters; the name is ours (digits and
	// underscores) and quoted as an identifier.
	if _, err := conn.Exec(ctx, "CREATE SCHEMA "+pgx.Identifier{t.schema}.Sanitize()); err != nil {
		return nil, fmt.Errorf("bench: create schema %s: %w", t.schema, store.Interpret(err))
	}
	if t.pool, err = t.openPool(ctx, conns); err != nil {
		t.dropSchema(ctx)
		return nil, err
	}
	if err := t.migrate(ctx, conns); err != nil {
		t.close(ctx)
		return nil, err
	}
	return t, nil
}

// openPool opens a pool of conns connections confined to the target's
// schema, each statement counted (and delayed by rtt) by roundTripCounter.
func (t *target) openPool(ctx context.Context, conns int) (*pgxpool.Pool, error) {
	return t.openPoolTraced(ctx, conns, roundTripCounter{delay: t.rtt})
}

// openPoolTraced is openPool whose statements go through tracer instead.
func (t *target) openPoolTraced(ctx context.Context, conns int, tracer pgx.QueryTracer) (*pgxpool.Pool, error) {
	cfg, err := pgxpool.ParseConfig(t.dsn)
	if err != nil {
		return nil, fmt.Errorf("bench: %w", err)
	}
	cfg.ConnConfig.RuntimeParams["search_path"] = t.schema
	cfg.ConnConfig.RuntimeParams["application_name"] = t.appName
	cfg.ConnConfig.Tracer = tracer
	cfg.MaxConns = int32(conns)
	// Ping only connections that sat idle for long, as in production; the
	// default's pings between series would be uncounted round trips.
	cfg.ShouldPing = func(_ context.Context, p pgxpool.ShouldPingParams) bool { return p.IdleDuration > time.Minute }
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("bench: %w", err)
	}
	return pool, nil
}

func (t *target) migrate(ctx context.Context, floorRows int) error {
	if err := store.Migrate(ctx, t.pool); err != nil {
		return fmt.Errorf("bench: apply schema.sql: %w", err)
	}
	if _, err := t.pool.Exec(ctx, benchTablesSQL, pgx.QueryExecModeSimpleProtocol); err != nil {
		return fmt.Errorf("bench: create benchmark tables: %w", store.Interpret(err))
	}
	if _, err := t.pool.Exec(ctx, floorRowsSQL, floorRows); err != nil {
		return fmt.Errorf("bench: fill floor table: %w", store.Interpret(err))
	}
	return nil
}

// close drops the run's schema, so a run against a real server leaves
// nothing behind.
func (t *target) close(ctx context.Context) {
	if t.pool != nil {
		t.pool.Close()
	}
	t.dropSchema(ctx)
}

func (t *target) dropSchema(ctx context.Context) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, t.dsn)
	if err != nil {
		return
	}
	defer conn.Close(ctx)
	_, _ = conn.Exec(ctx, "DROP SCHEMA IF EXISTS "+pgx.Identifier{t.schema}.Sanitize()+" CASCADE")
}

// roundTripCounter counts the statements a worker sends (BEGIN and COMMIT
// included): with pgx's statement cache each is one round trip. The counter
// travels in the context, one per worker, so no locking is needed: pgx calls
// the tracer on the goroutine that runs the statement.
//
// With a delay, it also waits that long before each statement goes out: a
// stand-in for a network's round-trip time that, like a real network, also
// keeps a transaction (and its row locks) open that much longer between
// its statements. Only the benchmark's workers carry a counter, so nothing
// else is delayed.
type roundTripCounter struct{ delay time.Duration }

type roundTripKey struct{}

func withRoundTrips(ctx context.Context, n *int64) context.Context {
	return context.WithValue(ctx, roundTripKey{}, n)
}

func (c roundTripCounter) TraceQueryStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryStartData) context.Context {
	if n, ok := ctx.Value(roundTripKey{}).(*int64); ok {
		*n++
		if c.delay > 0 {
			time.Sleep(c.delay)
		}
	}
	return ctx
}

func (roundTripCounter) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

// ServerInfo describes the server a run measured.
type ServerInfo struct {
	Version  string            `json:"version"`
	Settings map[string]string `json:"settings"`
}

const serverInfoSQL = `
SELECT name, current_setting(name) FROM pg_settings WHERE name = ANY($1::text[]) ORDER BY name`

const serverVersionSQL = `SELECT current_setting('server_version')`

// reportedSettings are the settings that decide commit cost and capacity.
var reportedSettings = []string{"fsync", "synchronous_commit", "full_page_writes",
	"wal_sync_method", "commit_delay", "shared_buffers", "max_connections", "wal_level"}

func (t *target) serverInfo(ctx context.Context) (ServerInfo, error) {
	info := ServerInfo{Settings: map[string]string{}}
	if err := t.pool.QueryRow(ctx, serverVersionSQL).Scan(&info.Version); err != nil {
		return info, fmt.Errorf("bench: server version: %w", store.Interpret(err))
	}
	rows, err := t.pool.Query(ctx, serverInfoSQL, reportedSettings)
	if err != nil {
		return info, fmt.Errorf("bench: server settings: %w", store.Interpret(err))
	}
	defer rows.Close()
	for rows.Next() {
		var name, value string
		if err := rows.Scan(&name, &value); err != nil {
			return info, err
		}
		info.Settings[name] = value
	}
	return info, rows.Err()
}
