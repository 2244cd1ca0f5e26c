package bench

// Prototypes of the locker's statements with one cost removed at a time, to
// find where the locker's time goes on a durable server. Not part of the
// regular tests (it takes a minute and starts its own durable server): run
// with LOCKCTL_BENCH_PROFILE=1 go test -run TestVariants -v ./internal/bench/
// The SQL below is copied from store/grant.go and store/lease.go as they
// were before commit 1561dec (which made releases HOT) and edited; it is
// measurement code, never used by the locker.

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/lockctl/lockctl/internal/pgtemp"
	"github.com/lockctl/lockctl/internal/testdb"
	"github.com/lockctl/lockctl/locker"
)

// protoGrantSQL is store's grantSQL; the markers are cut to make variants.
const protoGrantGate = `WITH gate AS MATERIALIZED (
    SELECT pg_advisory_xact_lock_shared('distributed_lock'::regclass::oid::int, 0)
), `

const protoGrantBody = `granted AS (
    INSERT INTO distributed_lock AS l
        (lock_key, owner_id, fence_token, expires_at, ttl, acquired_at, metadata)
    VALUES ($1, $2, (SELECT nextval('distributed_lock_fence_seq') %s),
            clock_timestamp() + $3::bigint * interval '1 microsecond',
            $3::bigint * interval '1 microsecond', clock_timestamp(), $4::jsonb)
    ON CONFLICT (lock_key) DO UPDATE SET
        (owner_id, fence_token, expires_at, ttl, acquired_at, renewed_at, renew_count,
         released_at, grant_kind, previous_owner, previous_token, metadata) =
        (SELECT excluded.owner_id,
                CASE WHEN d.mine THEN l.fence_token ELSE nextval('distributed_lock_fence_seq') END,
                d.ts + excluded.ttl,
                excluded.ttl,
                CASE WHEN d.mine THEN l.acquired_at ELSE d.ts END,
                CASE WHEN d.mine THEN d.ts END,
                CASE WHEN d.mine THEN l.renew_count + 1 ELSE 0 END,
                NULL::timestamptz,
                CASE WHEN d.mine THEN l.grant_kind
                     WHEN l.released_at IS NULL AND l.owner_id <> excluded.owner_id THEN 'stolen'
                     ELSE 'acquired' END,
                CASE WHEN d.mine THEN l.previous_owner ELSE l.owner_id END,
                CASE WHEN d.mine THEN l.previous_token ELSE l.fence_token END,
                excluded.metadata
         FROM (SELECT c.ts, (l.owner_id = excluded.owner_id AND l.released_at IS NULL
                             AND l.expires_at > c.ts) AS mine
               FROM (SELECT clock_timestamp() AS ts) c) d)
    WHERE l.released_at IS NOT NULL OR l.owner_id = excluded.owner_id
       OR l.expires_at <= clock_timestamp()
    RETURNING l.*
)`

const protoGrantLogged = `, logged AS (
    INSERT INTO distributed_lock_event
        (lock_key, kind, owner_id, fence_token, actor, previous_owner, previous_token, detail)
    SELECT g.lock_key, g.grant_kind, g.owner_id, g.fence_token, $5, g.previous_owner,
           g.previous_token, $6::jsonb
    FROM granted g WHERE g.renew_count = 0
)`

const protoGrantTail = `
SELECT l.fence_token FROM granted l`

const protoReleaseHead = `
WITH released AS (
    UPDATE distributed_lock l
    SET released_at = clock_timestamp(), expires_at = least(l.expires_at, clock_timestamp())
    WHERE l.lock_key = $1 AND l.owner_id = $2 AND l.fence_token = $3 AND l.released_at IS NULL
    RETURNING l.*
)`

const protoReleaseLogged = `, logged AS (
    INSERT INTO distributed_lock_event (lock_key, kind, owner_id, fence_token, actor)
    SELECT r.lock_key, 'released', r.owner_id, r.fence_token, $4 FROM released r
)`

const protoReleaseTail = `
SELECT l.fence_token FROM released l,
     LATERAL (SELECT CASE WHEN distributed_lock_has_waiters(l.lock_key)
                          THEN pg_notify('distributed_lock', l.lock_key) END) n`

// Variants of grant and release.
var (
	protoFullGrant      = protoGrantGate + fmt.Sprintf(protoGrantBody, "FROM gate") + protoGrantLogged + protoGrantTail
	protoNoEventGrant   = protoGrantGate + fmt.Sprintf(protoGrantBody, "FROM gate") + protoGrantTail
	protoNoGateGrant    = "WITH " + fmt.Sprintf(protoGrantBody, "") + protoGrantLogged + protoGrantTail
	protoFullRelease    = protoReleaseHead + protoReleaseLogged + protoReleaseTail
	protoNoEventRelease = protoReleaseHead + protoReleaseTail
)

// The console's secondary indexes on distributed_lock: every grant and
// release changes a column they cover, so no update can be HOT while they
// exist.
const protoDropConsoleIndexesSQL = `
DROP INDEX IF EXISTS distributed_lock_expires_idx;
DROP INDEX IF EXISTS distributed_lock_token_idx;
DROP INDEX IF EXISTS distributed_lock_acquired_idx;
DROP INDEX IF EXISTS distributed_lock_released_idx;`

// protoTuneSQL is the schema side of the tuned prototype: has_waiters in
// PL/pgSQL (plans cached per session), no occurred_at index on events (the
// event_id order is the time order), no partial index on released_at (so a
// release that sets only released_at can be a HOT update).
const protoTuneSQL = `
CREATE FUNCTION bench_has_waiters(key text) RETURNS boolean
    LANGUAGE plpgsql VOLATILE AS $$
BEGIN
    RETURN EXISTS (SELECT 1 FROM distributed_lock_waiter w
                   WHERE w.lock_key = key AND w.seen_until > clock_timestamp());
END $$;
DROP INDEX IF EXISTS distributed_lock_event_time_idx;
DROP INDEX IF EXISTS distributed_lock_released_idx;`

// protoTunedRelease sets released_at only (expires_at stays: the row is
// free because released_at is set) and asks the PL/pgSQL has_waiters.
const protoTunedRelease = `
WITH released AS (
    UPDATE distributed_lock l SET released_at = clock_timestamp()
    WHERE l.lock_key = $1 AND l.owner_id = $2 AND l.fence_token = $3 AND l.released_at IS NULL
    RETURNING l.*
), logged AS (
    INSERT INTO distributed_lock_event (lock_key, kind, owner_id, fence_token, actor)
    SELECT r.lock_key, 'released', r.owner_id, r.fence_token, $4 FROM released r
)
SELECT l.fence_token FROM released l,
     LATERAL (SELECT CASE WHEN bench_has_waiters(l.lock_key)
                          THEN pg_notify('distributed_lock', l.lock_key) END) n`

// Both event indexes (the primary key stays).
const protoDropEventIndexesSQL = `
DROP INDEX IF EXISTS distributed_lock_event_key_idx;
DROP INDEX IF EXISTS distributed_lock_event_time_idx;`

// protoBare is the "bare one-statement upsert + release" the targets were
// calibrated with: no event, no gate, no metadata, on the real table.
const protoBareGrantSQL = `
INSERT INTO distributed_lock AS l (lock_key, owner_id, fence_token, expires_at, ttl, acquired_at)
VALUES ($1, $2, nextval('distributed_lock_fence_seq'), clock_timestamp() + interval '30 seconds',
        interval '30 seconds', clock_timestamp())
ON CONFLICT (lock_key) DO UPDATE SET owner_id = excluded.owner_id,
    fence_token = nextval('distributed_lock_fence_seq'), expires_at = excluded.expires_at,
    acquired_at = excluded.acquired_at, released_at = NULL
WHERE l.released_at IS NOT NULL OR l.expires_at <= clock_timestamp()
RETURNING l.fence_token`

const protoBareReleaseSQL = `
UPDATE distributed_lock l SET released_at = clock_timestamp()
WHERE l.lock_key = $1 AND l.owner_id = $2 AND l.fence_token = $3 AND l.released_at IS NULL`

func protoSeries(name string, pool *pgxpool.Pool, grantSQL, releaseSQL string, grantArgs, releaseArgs int, chk *checker) series {
	return series{name: name, cycle: func(ctx context.Context, worker int, key string) (bool, error) {
		o := owner(worker)
		var token int64
		args := []any{key, o, int64(30e6), map[string]any{"host": "h"}, o, map[string]any{}}
		err := pool.QueryRow(ctx, grantSQL, args[:grantArgs]...).Scan(&token)
		if errors.Is(err, pgx.ErrNoRows) {
			return false, nil
		}
		if err != nil {
			return false, err
		}
		chk.granted(key, o, token)
		chk.releasing(key, o)
		_, err = pool.Exec(ctx, releaseSQL, []any{key, o, token, o}[:releaseArgs]...)
		return true, err
	}}
}

func TestVariants(t *testing.T) {
	profiling(t, "profile locker variants (about a minute, own durable server)")
	ctx := context.Background()
	srv, err := pgtemp.Start(ctx, pgtemp.Options{HandleSignals: true, Settings: map[string]string{
		"shared_preload_libraries": "pg_stat_statements", "track_io_timing": "on"}})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	dsn := srv.DSN("")
	schema := testdb.SchemaSQL(t)
	workers := 8
	open := func(extra string) *target {
		tg, err := openTarget(ctx, dsn, schema, workers)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { tg.close(ctx) })
		if extra != "" {
			if _, err := tg.pool.Exec(ctx, extra, pgx.QueryExecModeSimpleProtocol); err != nil {
				t.Fatal(err)
			}
		}
		return tg
	}
	base, noIdx, tuned := open(""), open(protoDropConsoleIndexesSQL), open(protoTuneSQL)
	lk, _ := locker.New(locker.Config{TTL: 30 * time.Second})
	all := []series{
		referenceSeries(SeriesReference, reference{pool: base.pool, ttl: 30 * time.Second}, newChecker()),
		lockerSeries(SeriesLocker, lk, base.pool, newChecker()),
		commitFloorSeries(base.pool),
		protoSeries("proto-full", base.pool, protoFullGrant, protoFullRelease, 6, 4, newChecker()),
		protoSeries("proto-no-event", base.pool, protoNoEventGrant, protoNoEventRelease, 4, 3, newChecker()),
		protoSeries("proto-no-gate", base.pool, protoNoGateGrant, protoFullRelease, 6, 4, newChecker()),
		protoSeries("proto-bare", base.pool, protoBareGrantSQL, protoBareReleaseSQL, 2, 3, newChecker()),
		rename(lockerSeries(SeriesLocker, lk, noIdx.pool, newChecker()), "locker-no-console-idx"),
		protoSeries("proto-tuned", tuned.pool, protoFullGrant, protoTunedRelease, 6, 4, newChecker()),
	}
	samplerConn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer samplerConn.Close(ctx)
	var samples []sample
	for round := range 3 {
		for _, s := range rotate(all, round) {
			smp, err := runSeries(ctx, s, ScenarioSolo, workers, soloKeys, 2*time.Second,
				&serverProbe{conn: samplerConn, appName: "", every: time.Second}, nil)
			if err != nil {
				t.Fatal(err)
			}
			samples = append(samples, smp)
		}
	}
	if _, err := samplerConn.Exec(ctx, `CREATE EXTENSION IF NOT EXISTS pg_stat_statements`); err != nil {
		t.Fatal(err)
	}
	rows, err := samplerConn.Query(ctx, protoStatementsSQL)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var q string
		var calls int64
		var mean, plan, blkHit, walB, walFPI float64
		if err := rows.Scan(&q, &calls, &mean, &plan, &blkHit, &walB, &walFPI); err != nil {
			t.Fatal(err)
		}
		t.Logf("%8d calls  exec %.3f ms  plan %.3f ms  %5.1f buffers  WAL %6.0f B  FPI %.2f  %s", calls, mean, plan, blkHit, walB, walFPI, q)
	}
	rows.Close()
	var walInfo string
	if err := samplerConn.QueryRow(ctx, protoWALSQL).Scan(&walInfo); err != nil {
		t.Fatal(err)
	}
	t.Log("pg_stat_wal: ", walInfo)
	for _, r := range aggregate(samples, Options{}) {
		t.Logf("%-24s %6.0f cycles/s (%4.0f–%4.0f)  p50 %s  WAL/cycle %5.0f B  RT %.1f  CPU/cycle %s  %v",
			r.Series, r.CyclesPerSec, r.CyclesPerSecMin, r.CyclesPerSecMax, ms(r.P50), r.WALPerCycle, r.RoundTripsPerCycle, cpuPair(r), r.TopWaits(3))
	}
}

const protoStatementsSQL = `
SELECT left(regexp_replace(query, '\s+', ' ', 'g'), 90), calls, mean_exec_time, mean_plan_time,
       (shared_blks_hit + shared_blks_read + shared_blks_dirtied)::float8 / calls,
       wal_bytes::float8 / calls, wal_fpi::float8 / calls
FROM pg_stat_statements WHERE calls > 1000 ORDER BY calls DESC LIMIT 20`

const protoWALSQL = `SELECT row_to_json(w)::text FROM pg_stat_wal w`

func rename(s series, name string) series { s.name = name; return s }
