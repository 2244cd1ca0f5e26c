package roles_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/lockctl/lockctl/internal/lockdb"
	"github.com/lockctl/lockctl/internal/lockview"
	"github.com/lockctl/lockctl/internal/operator"
	"github.com/lockctl/lockctl/internal/roles"
	"github.com/lockctl/lockctl/internal/testdb"
	"github.com/lockctl/lockctl/locker"
	"github.com/lockctl/lockctl/store"
)

// aMegabyte is far more than the schema keeps of anything a caller hands
// it.
var aMegabyte = strings.Repeat("x", 1<<20)

// oversized are calls a service or an operator may make whose values the
// schema refuses: huge lease lengths and delays (by name, never "interval
// out of range" or a lease to the year 287225), and metadata, details,
// reasons, actors and host names of a megabyte. $1 is a megabyte of text,
// $TOKEN the held lock's token.
var oversized = map[roles.Kind][]struct{ what, sql string }{
	roles.Service: {
		{"ttl_us 9e18", `SELECT * FROM distributed_lock_acquire('k', 'o', 9000000000000000000)`},
		{"ttl_us 2^63-1", `SELECT * FROM distributed_lock_acquire('k', 'o', 9223372036854775807)`},
		// Its own lease (another role's is not renewed at all): taken and
		// renewed in one statement, which the refusal undoes whole.
		{"ttl_us 2^63-1, a renewal", `SELECT * FROM distributed_lock_renew('own', 'o',
			(SELECT a.fence_token FROM distributed_lock_acquire('own', 'o', 60000000) a), 9223372036854775807)`},
		{"lock_delay_us 2^63-1", `SELECT * FROM distributed_lock_acquire('k', 'o', 60000000, lock_delay_us => 9223372036854775807)`},
		{"a megabyte of metadata", `SELECT * FROM distributed_lock_acquire('k', 'o', 60000000, jsonb_build_object('x', $1::text))`},
		{"a megabyte of event detail", `SELECT * FROM distributed_lock_acquire('k', 'o', 60000000, NULL, NULL, jsonb_build_object('x', $1::text), true)`},
		{"a megabyte of stale-write detail", `SELECT distributed_lock_report_stale_write('held', 'o', 1, NULL, jsonb_build_object('x', $1::text))`},
		{"a megabyte of owner in a stale write", `SELECT distributed_lock_report_stale_write('held', $1::text, 1, 'svc')`},
		{"a waiter's actor of a megabyte", `SELECT * FROM distributed_lock_enqueue('held', 'w', 60000000, 1000000, 1000000, NULL, $1::text)`},
		{"a waiter seen for 2^63-1", `SELECT * FROM distributed_lock_enqueue('held', 'w', 60000000, 1000000, 9223372036854775807)`},
		{"a session's host of a megabyte", `SELECT * FROM distributed_lock_open_session('o', 60000000, $1::text)`},
		{"a session of 2^63-1", `SELECT * FROM distributed_lock_open_session('o', 9223372036854775807)`},
	},
	roles.Operator: {
		{"a reason of a megabyte", `SELECT * FROM distributed_lock_force_expire('held', $TOKEN, NULL, $1::text)`},
		{"an end-delay's reason of a megabyte", `SELECT * FROM distributed_lock_end_delay('delayed', NULL, $1::text)`},
	},
}

// storedSQL is what a call could have stored, as one text.
const storedSQL = `
SELECT concat_ws(' | ',
    (SELECT json_agg(l ORDER BY l.lock_key, l.slot)::text FROM distributed_lock l),
    (SELECT json_agg(e ORDER BY e.event_id)::text FROM distributed_lock_event e),
    (SELECT json_agg(w ORDER BY w.waiter_id)::text FROM distributed_lock_waiter w),
    (SELECT json_agg(s ORDER BY s.session_id)::text FROM distributed_lock_session s))`

// Nothing a service or an operator hands the protocol is stored past its
// bound: each oversized value is refused with lockdb.ErrInvalidValue, and
// nothing is stored.
func TestOversizedValuesAreRefused(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := newEnv(t)
	held := makeLocks(t, e)
	var before string
	if err := e.admin.QueryRow(ctx, storedSQL).Scan(&before); err != nil {
		t.Fatal(err)
	}
	for kind, calls := range oversized {
		db := e.roleWith(t, kind)
		for _, c := range calls {
			sql := strings.ReplaceAll(c.sql, "$TOKEN", strconv.FormatInt(held.Token, 10))
			var args []any
			if strings.Contains(sql, "$1") {
				args = append(args, aMegabyte)
			}
			_, err := db.Exec(ctx, sql, args...)
			if err = store.Interpret(err); !errors.Is(err, lockdb.ErrInvalidValue) || strings.Contains(err.Error(), "out of range") {
				t.Errorf("%s, as a %s: %v; want lockdb.ErrInvalidValue", c.what, kind, err)
			}
		}
	}
	var after string
	if err := e.admin.QueryRow(ctx, storedSQL).Scan(&after); err != nil {
		t.Fatal(err)
	}
	if after != before {
		t.Errorf("an oversized value was stored:\nbefore %s\nafter  %s", before, after)
	}
}

// The library refuses what the schema would, before sending it.
func TestLockerRefusesOversizedValues(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	if _, err := locker.New(locker.Config{Metadata: map[string]any{"x": aMegabyte}}); !errors.Is(err, locker.ErrTooLarge) {
		t.Errorf("New with a megabyte of metadata: %v; want ErrTooLarge", err)
	}
	e := newEnv(t)
	held := makeLocks(t, e)
	lk := testdb.Locker(t, locker.Config{TTL: time.Minute})
	if err := lk.ReportStaleWrite(ctx, e.roleWith(t, roles.Service), held, aMegabyte); !errors.Is(err, locker.ErrTooLarge) {
		t.Errorf("ReportStaleWrite of a megabyte: %v; want ErrTooLarge", err)
	}
	op := e.roleWith(t, roles.Operator)
	if _, err := (operator.Operator{}).EndDelay(ctx, op, "delayed", aMegabyte); !errors.Is(err, locker.ErrTooLarge) {
		t.Errorf("EndDelay with a megabyte of reason: %v; want ErrTooLarge", err)
	}
	if _, err := (operator.Operator{}).EndSession(ctx, op, 1, aMegabyte); !errors.Is(err, locker.ErrTooLarge) {
		t.Errorf("EndSession with a megabyte of reason: %v; want ErrTooLarge", err)
	}
}

// A detail stored before the schema bounded it (written here by the owner
// with the bound lifted) reaches a viewer reading the history as its size
// alone: what the reader fetches stays small.
func TestAViewerReadsLargeDetailsAsTheirSize(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := newEnv(t)
	for _, stmt := range []string{
		`ALTER DOMAIN distributed_lock_json DROP CONSTRAINT distributed_lock_json_check`,
		`INSERT INTO distributed_lock_event (occurred_at, lock_key, kind, owner_id, actor, detail)
		 VALUES (clock_timestamp(), 'big', 'stale_write_rejected', 'o', 'o', jsonb_build_object('x', repeat(md5(random()::text), 65536)))`,
		`ALTER DOMAIN distributed_lock_json ADD CONSTRAINT distributed_lock_json_check
		 CHECK (pg_column_size(VALUE) <= 8192) NOT VALID`,
	} {
		if _, err := e.admin.Exec(ctx, stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	viewer := e.roleWith(t, roles.Viewer)
	for what, read := range map[string]func(*pgxpool.Pool) ([]lockview.Event, error){
		"History": func(db *pgxpool.Pool) ([]lockview.Event, error) {
			return lockview.History(ctx, db, lockview.HistoryQuery{Limit: 10})
		},
		"KeyEvents":    func(db *pgxpool.Pool) ([]lockview.Event, error) { return lockview.KeyEvents(ctx, db, "big", 10) },
		"RecentEvents": func(db *pgxpool.Pool) ([]lockview.Event, error) { return lockview.RecentEvents(ctx, db, 0, 10) },
	} {
		events, err := read(viewer)
		if err != nil || len(events) != 1 {
			t.Fatalf("%s as a viewer: %d events, %v; want the one", what, len(events), err)
		}
		if n, ok := events[0].Detail["omitted_bytes"].(float64); !ok || n <= lockdb.MaxJSONBytes || len(events[0].Detail) != 1 {
			t.Errorf("%s as a viewer: a detail of %d keys, omitted_bytes %v; want only its stored size, over %d",
				what, len(events[0].Detail), events[0].Detail["omitted_bytes"], lockdb.MaxJSONBytes)
		}
	}
}
