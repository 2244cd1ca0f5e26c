package store_test

import (
	"os"
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
