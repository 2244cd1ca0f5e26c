package store_test

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/lockctl/lockctl/store"
)

// The embedded copy must be the schema.sql people edit: after changing it,
// run `go generate ./store`.
func TestSchemaCopyIsCurrent(t *testing.T) {
	root, err := os.ReadFile("../schema.sql")
	if err != nil {
		t.Fatal(err)
	}
	if string(root) != store.Schema {
		t.Fatal("store/schema.sql differs from the root schema.sql: run `go generate ./store`")
	}
}

// docs/protocol.md is the contract for clients in other languages: every
// protocol function of the schema is there, with its arguments as the
// schema declares them.
func TestProtocolFunctionsAreDocumented(t *testing.T) {
	page, err := os.ReadFile("../docs/protocol.md")
	if err != nil {
		t.Fatal(err)
	}
	// CREATE OR REPLACE FUNCTION name(args) RETURNS …: the arguments may
	// span lines; the page writes them on one.
	decl := regexp.MustCompile(`(?s)CREATE OR REPLACE FUNCTION (distributed_lock_\w+)\((.*?)\)\s*RETURNS`)
	found := 0
	for _, m := range decl.FindAllStringSubmatch(store.Schema, -1) {
		name, args := m[1], strings.Join(strings.Fields(m[2]), " ")
		if name == "distributed_lock_event_immutable" || name == "distributed_lock_has_waiters" {
			continue // a trigger, and a reader kept for old binaries: not the protocol
		}
		found++
		if !strings.Contains(string(page), "`"+name+"("+args+")`") {
			t.Errorf("docs/protocol.md does not show `%s(%s)`", name, args)
		}
	}
	if found < 12 {
		t.Errorf("found %d protocol functions in schema.sql; want at least 12", found)
	}
}
