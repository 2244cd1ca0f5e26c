package protocol_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/lockctl/lockctl/internal/testdb"
)

// fnCase is one row of a function's table: a state, a call, and what the
// call must answer and leave behind.
type fnCase struct {
	name  string
	state state
	key   *string // the key to prepare and call; nil: one of the case's own
	// call is the statement, `SELECT * FROM distributed_lock_x(...)` with
	// arguments by name (so the names are checked too), for key.
	call func(key string, p prepared) (string, []any)
	// during, when set, makes the call while another transaction is at a
	// given point.
	during during
	want   want
}

// want is what a call must answer and leave behind. With err set the call
// must fail with that SQLSTATE and change nothing; the rest is ignored.
type want struct {
	err string

	outcome   string // the outcome column (or the text a function returns)
	owner     string // the owner_id column; "": NULL
	token     tok    // the fence_token column
	remaining *span  // the remaining column, when set
	waiterID  string // the waiter_id column: that waiter's id (by owner); "": NULL
	value     any    // a scalar function's result, when set
	nullKey   bool   // the lock_key column is NULL (first_grant's lost race)
	// refusal is what a refusal says beyond the holder (queue_length,
	// queue_position, delay_until), for a function with those columns;
	// nil: all NULL (a grant, or no refusal).
	refusal *refusalWant

	row     rowWant
	events  []eventWant
	waiters []waiterWant
	notify  []notifyWant

	// sessions is each prepared session after the call, in the state's
	// order; nil: every one untouched (session_expect_test.go).
	sessions []sessionWant
	// slots are the key's holder slots after the call, in slot order;
	// nil: every one as prepared (holder_expect_test.go).
	slots []slotWant

	// check, when set, looks at anything else.
	check func(t *testing.T, result map[string]any, p prepared, after observed)
}

// fixture is one function's table test: a migrated schema, and the
// outcomes its cases saw, which must be the ones docs/protocol.md documents
// for the function.
type fixture struct {
	fn     string
	db     *pgxpool.Pool
	schema string

	mu   sync.Mutex
	seen map[string]bool

	// serial: the cases run one at a time, and each one's waiter records
	// are deleted after it (newWaitsFixture).
	serial bool
}

// newFixture sets up fn's table test on the package's shared schema, where
// every case has keys of its own. When the test ends, the outcomes its
// cases saw must be exactly the documented ones (less those reachable only
// by a race, listed in unreachable).
func newFixture(t *testing.T, fn string) *fixture {
	t.Helper()
	return fixtureOn(t, fn, sharedPool(t))
}

// newIsolatedFixture is newFixture on a schema of the test's own, for a
// function whose effects are not confined to a key (prune, the epoch).
func newIsolatedFixture(t *testing.T, fn string) *fixture {
	t.Helper()
	return fixtureOn(t, fn, testdb.New(t))
}

// newWaitsFixture is newIsolatedFixture for a function that looks for
// deadlocks: the wait-for graph spans every key of a schema and the cases
// share owner names, so the cases run one at a time and leave no waiter
// record behind for the next one to see.
func newWaitsFixture(t *testing.T, fn string) *fixture {
	t.Helper()
	f := newIsolatedFixture(t, fn)
	f.serial = true
	return f
}

func fixtureOn(t *testing.T, fn string, db *pgxpool.Pool) *fixture {
	t.Helper()
	f := &fixture{fn: fn, db: db, seen: map[string]bool{}}
	if err := f.db.QueryRow(context.Background(), `SELECT current_schema()`).Scan(&f.schema); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			return
		}
		for _, o := range documentedOutcomes(t, fn) {
			if !f.seen[o] && unreachable[fn][o] == "" {
				t.Errorf("docs/protocol.md documents outcome %q of %s; no case of its table reaches it", o, fn)
			}
		}
	})
	return f
}

var (
	sharedOnce  sync.Once
	sharedDB    *pgxpool.Pool
	sharedSetUp bool
)

// sharedPool is a pool on one migrated schema for the whole package (a
// migration costs more than all the cases on it), closed by TestMain.
func sharedPool(t *testing.T) *pgxpool.Pool {
	t.Helper()
	sharedOnce.Do(func() {
		cfg, err := pgxpool.ParseConfig(testdb.DSN(t))
		if err != nil {
			t.Fatal(err)
		}
		// A case takes up to four connections at once (the call, a
		// listener, another transaction, a look at pg_stat_activity).
		cfg.MaxConns = 40
		pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
		if err != nil {
			t.Fatalf("open the shared schema: %v", err)
		}
		sharedDB, sharedSetUp = pool, true
	})
	if !sharedSetUp {
		t.Fatal("the shared schema could not be set up (see the first test that tried)")
	}
	return sharedDB
}

// unreachable lists documented outcomes no deterministic case can reach,
// and why.
var unreachable = map[string]map[string]string{
	"distributed_lock_enqueue": {
		"busy": "the key must lose its row three times in a row between enqueue's look and its grant",
	},
	"distributed_lock_enqueue_shared": {
		"busy": "another's first grant must make the key's row between enqueue_shared's look and its attempt, and the attempt be refused",
	},
	"distributed_lock_enqueue_all": {
		"busy": "a key must lose its row three times in a row between the set's insert and its lock",
	},
}

// run runs the cases in parallel, each on its own key.
func (f *fixture) run(t *testing.T, cases []fnCase) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if !f.serial {
				t.Parallel()
				f.runCase(t, c)
				return
			}
			defer func() {
				if _, err := f.db.Exec(context.Background(), `DELETE FROM distributed_lock_waiter`); err != nil {
					t.Errorf("clear the waiters after the case: %v", err)
				}
			}()
			f.runCase(t, c)
		})
	}
}

func (f *fixture) runCase(t *testing.T, c fnCase) {
	t.Helper()
	ctx := context.Background()
	key := t.Name()
	if c.key != nil {
		key = *c.key
	}
	p := prepareCase(t, f.db, key, c.state)
	before := observe(t, f.db, key)
	chk := checker{t: t, p: p, before: before.row, sessionsBefore: observeSessions(t, f.db, p.sessions),
		slotsBefore: before.slots, tokenBelow: lastToken(t, f.db)}
	l := listen(t, f.db)

	sql, args := c.call(key, p)
	var result map[string]any
	var err error
	call := func() {
		rows, _ := f.db.Query(ctx, sql, args...)
		result, err = pgx.CollectExactlyOneRow(rows, pgx.RowToMap)
	}
	if c.during != nil {
		c.during(t, f.db, key, call)
	} else {
		call()
	}
	notes := l.collect(t, f.db, key)
	chk.tokenAbove = lastToken(t, f.db)
	after := observe(t, f.db, key)
	after.sessions = observeSessions(t, f.db, p.sessions)
	if after.row != nil {
		chk.readAt = after.row.ReadAt
	}

	w := c.want
	if w.err != "" {
		var pgErr *pgconn.PgError
		if !errors.As(err, &pgErr) || pgErr.Code != w.err {
			t.Fatalf("%s: got %v, %v; want SQLSTATE %s", sql, result, err, w.err)
		}
		if !slices.Contains(documentedErrors(t), w.err) {
			t.Errorf("SQLSTATE %s is not in docs/protocol.md's Errors table", w.err)
		}
		w = want{row: untouched}
		for _, pw := range c.state.waiters {
			w.waiters = append(w.waiters, waiterWant{owner: pw.owner})
		}
	} else if err != nil {
		t.Fatalf("%s: %v", sql, err)
	} else {
		f.result(t, chk, key, result, w, after)
	}
	chk.row(after.row, w.row)
	chk.events(after.events, w.events)
	chk.waiters(after.waiters, w.waiters)
	chk.notifications(notes, w.notify, key, f.schema, after.row, after.slots)
	chk.sessions(after.sessions, w.sessions)
	chk.slots(after.slots, w.slots)
	if w.check != nil && err == nil {
		w.check(t, result, p, after)
	}
}

// prepareCase writes s for key: the set's other keys first (their waiter
// records are the older), then the key, then the sessions binding them.
func prepareCase(t *testing.T, db *pgxpool.Pool, key string, s state) prepared {
	t.Helper()
	set := prepareSet(t, db, key, s)
	p := prepare(t, db, key, s)
	p.set = set
	groupSets(t, db, p)
	p.sessions = prepareSessions(t, db, s.sessions, p)
	prepareRevoke(t, db, p, s.revoke)
	return p
}

// result checks the columns of the call's row that the function has.
func (f *fixture) result(t *testing.T, chk checker, key string, result map[string]any, w want, after observed) {
	t.Helper()
	documented := documentedOutcomes(t, f.fn)
	outcome, isRow := result["outcome"]
	if !isRow && documented != nil {
		outcome = result["result"] // a function whose text result is its outcome
	}
	if o, ok := outcome.(string); ok {
		f.mu.Lock()
		f.seen[o] = true
		f.mu.Unlock()
		if o != w.outcome {
			t.Errorf("outcome %q; want %q (%v)", o, w.outcome, result)
		}
		if docFunctions(t)[f.fn].outcomesTable && !slices.Contains(documented, o) {
			t.Errorf("outcome %q is not among the ones docs/protocol.md documents for %s: %v", o, f.fn, documented)
		}
	} else if w.outcome != "" {
		t.Errorf("no outcome in %v; want %q", result, w.outcome)
	}
	if w.value != nil && !sameJSON(result["result"], w.value) {
		t.Errorf("result %v; want %v", result["result"], w.value)
	}
	if !isRow {
		return
	}
	if k, ok := result["lock_key"]; ok && (w.nullKey && k != nil || !w.nullKey && k != key) {
		t.Errorf("lock_key %v; want %q (NULL: %v)", k, key, w.nullKey)
	}
	if o, _ := result["owner_id"].(string); o != w.owner {
		t.Errorf("owner_id %q; want %q", o, w.owner)
	}
	token, _ := result["fence_token"].(int64)
	tp := &token
	if result["fence_token"] == nil {
		tp = nil
	}
	chk.token("fence_token", tp, w.token)
	if w.remaining != nil {
		if d, ok := asDuration(result["remaining"]); !ok || !w.remaining.holds(d) {
			t.Errorf("remaining %v; want within [%v, %v]", result["remaining"], w.remaining.lo, w.remaining.hi)
		}
	}
	if _, has := result["queue_length"]; has {
		chk.refusal(result, w.refusal)
	}
	if id, has := result["waiter_id"]; has {
		var wantID any
		if w.waiterID != "" {
			wantID = waiterID(chk.p, after, w.waiterID)
		}
		if !sameJSON(id, wantID) {
			t.Errorf("waiter_id %v; want %v (%s)", id, wantID, orString(w.waiterID, "NULL"))
		}
	}
}

// waiterID is the id of owner's waiter: prepared, or left by the call.
func waiterID(p prepared, after observed, owner string) int64 {
	if id, ok := p.waiterIDs[owner]; ok {
		return id
	}
	for _, w := range after.waiters {
		if w.Owner == owner {
			return w.ID
		}
	}
	return p.handedTo
}
