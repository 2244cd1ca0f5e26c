// Package protocol_test tests the lock protocol where it runs: each SQL
// function of schema.sql called directly, one table test per function
// (fn_<function>_test.go). A case is a prepared state (the key's rows as
// they would be: no row, free, held by the caller or another, lapsed,
// queued, promised to a waiter, a lapsed hand-off) and what the call must
// answer and leave behind: outcome, token, the row, the events, the waiter
// rows and the NOTIFYs. contract_test.go keeps docs/protocol.md and the
// functions in step.
//
// States are written as the tables' owner (the role that migrated), with
// times relative to the database's clock, so no case sleeps or reads the
// client's clock. Each case has its own key, so cases run in parallel on
// one migrated schema; functions whose effects reach past a key (prune,
// the token epoch) have a schema of their own.
package protocol_test

import (
	"os"
	"testing"

	"github.com/lockctl/lockctl/internal/testdb"
)

func TestMain(m *testing.M) {
	os.Exit(testdb.Main(&closing{m}))
}

// closing closes the shared pool once the tests have run, before testdb
// stops the server.
type closing struct{ m *testing.M }

func (c *closing) Run() int {
	code := c.m.Run()
	if sharedDB != nil {
		sharedDB.Close()
	}
	return code
}
