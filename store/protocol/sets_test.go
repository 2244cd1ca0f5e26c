package protocol_test

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// also is another key of a case's key set: the case's key is the one whose
// row, events, waiters and NOTIFYs the fixture checks; a case's check
// looks at the others (keySet.observe).
type also struct {
	name  string
	first bool // its key sorts before the case's key (locked first)
	state state
}

// key is the also's key for the case's key.
func (a also) key(main string) string {
	if a.first {
		return "0/" + main + "/" + a.name
	}
	return main + "/" + a.name
}

// and adds other keys to a key set's state.
func (s state) and(others ...also) state {
	s.also = append(s.also, others...)
	return s
}

// keySet is a case's key set as prepared.
type keySet struct {
	db       *pgxpool.Pool
	main     string
	keys     map[string]string   // by also name
	prepared map[string]prepared // by also name
	before   map[string]observed // by also name, as prepared
}

// setID is one record of a waiting set, as prepared.
type setID struct {
	owner string
	id    int64
}

// prepareSet prepares the set's other keys.
func prepareSet(t *testing.T, db *pgxpool.Pool, main string, s state) *keySet {
	t.Helper()
	if len(s.also) == 0 {
		return nil
	}
	ks := &keySet{db: db, main: main, keys: map[string]string{}, prepared: map[string]prepared{},
		before: map[string]observed{}}
	for _, a := range s.also {
		ks.keys[a.name] = a.key(main)
		ks.prepared[a.name] = prepare(t, db, a.key(main), a.state)
		ks.before[a.name] = observe(t, db, a.key(main))
	}
	return ks
}

// groupSets puts the records of each owner's waiting set
// (waiterRow.inSet) on all the set's keys in one group.
func groupSets(t *testing.T, db *pgxpool.Pool, p prepared) {
	t.Helper()
	records := map[string][]int64{}
	all := []prepared{p}
	if p.set != nil {
		all = slices.AppendSeq(all, maps.Values(p.set.prepared))
	}
	for _, q := range all {
		for _, r := range q.setIDs {
			records[r.owner] = append(records[r.owner], r.id)
		}
	}
	for owner, ids := range records {
		if _, err := db.Exec(context.Background(), `
UPDATE distributed_lock_waiter SET group_id = (SELECT min(x) FROM unnest($1::bigint[]) x)
WHERE waiter_id = ANY ($1)`, ids); err != nil {
			t.Fatalf("group the set of %s: %v", owner, err)
		}
	}
}

// all is the set's keys: the case's first, then the others in the order
// the case named them (the functions sort them).
func (p prepared) all() []string {
	keys := []string{p.set.main}
	for _, name := range p.setNames() {
		keys = append(keys, p.set.keys[name])
	}
	return keys
}

func (p prepared) setNames() []string {
	return slices.Sorted(maps.Keys(p.set.keys))
}

// other reads another key of the set after the call.
func (p prepared) other(t *testing.T, name string) observed {
	t.Helper()
	return observe(t, p.set.db, p.set.keys[name])
}

// otherWaiter is the id of owner's waiter on another key of the set.
func (p prepared) otherWaiter(t *testing.T, name, owner string) int64 {
	t.Helper()
	if id, ok := p.set.prepared[name].waiterIDs[owner]; ok {
		return id
	}
	for _, w := range p.other(t, name).waiters {
		if w.Owner == owner {
			return w.ID
		}
	}
	t.Fatalf("no waiter %s on %s", owner, p.set.keys[name])
	return 0
}

// groupOf is the group of waiter id (NULL: 0).
func groupOf(t *testing.T, db *pgxpool.Pool, id int64) int64 {
	t.Helper()
	var g *int64
	if err := db.QueryRow(context.Background(), `SELECT group_id FROM distributed_lock_waiter WHERE waiter_id = $1`, id).Scan(&g); err != nil {
		t.Fatalf("group of waiter %d: %v", id, err)
	}
	if g == nil {
		return 0
	}
	return *g
}

// queuedSet adds live waiters (owners, in queue order), each one record of
// that owner's waiting key set.
func (s state) queuedSet(owners ...string) state {
	for _, o := range owners {
		s.waiters = append(s.waiters, waiterRow{owner: o, seenFor: 30 * time.Second, waitedFor: 2 * time.Second, inSet: true})
	}
	return s.waking()
}

// otherIs checks another key of the set after the call: its row's owner
// ("": no row), whether it is held, and its waiters' owners in order.
func otherIs(t *testing.T, p prepared, name, owner string, held bool, waiting ...string) {
	t.Helper()
	o := p.other(t, name)
	switch {
	case owner == "" && o.row != nil:
		t.Errorf("%s has a row %v; want none", p.set.keys[name], o.row)
	case owner == "":
	case o.row == nil:
		t.Errorf("%s has no row; want %s's", p.set.keys[name], owner)
	case o.row.Owner != owner || (o.row.ReleasedAt == nil && o.row.ExpiresIn > 0) != held:
		t.Errorf("%s: %v; want owner %s, held %v", p.set.keys[name], o.row, owner, held)
	}
	var got []string
	for _, w := range o.waiters {
		got = append(got, w.Owner)
	}
	if !slices.Equal(got, waiting) {
		t.Errorf("%s: waiters %v; want %v", p.set.keys[name], got, waiting)
	}
}

// manyKeys is a set of n keys named after the case's key.
func manyKeys(n int) func(key string) []string {
	return func(key string) []string {
		keys := []string{key}
		for i := 1; i < n; i++ {
			keys = append(keys, fmt.Sprintf("%s/%d", key, i))
		}
		return keys
	}
}
