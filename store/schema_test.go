package store_test

import (
	"os"
	"testing"

	"github.com/lockctl/lockctl/store"
)

// The root schema.sql is generated from store/sql: after changing those
// files, run `go generate ./store`.
func TestSchemaSQLIsGenerated(t *testing.T) {
	root, err := os.ReadFile("../schema.sql")
	if err != nil {
		t.Fatal(err)
	}
	if string(root) != store.PsqlScript() {
		t.Fatal("schema.sql differs from store/sql: run `go generate ./store`")
	}
}
