package protocol_test

import "testing"

// The functions search pg_catalog first, so their current_schema() is
// pg_catalog; payloads name the lock schema by this function, which is the
// caller's schema here.
func TestSchema(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "distributed_lock_schema")
	f.run(t, []fnCase{
		{name: "the lock tables' schema", state: noRow(), call: func(string, prepared) (string, []any) {
			return `SELECT distributed_lock_schema() = current_schema() AS result`, nil
		}, want: is(true)},
	})
}
