package store_test

import (
	"os"
	"regexp"
	"strings"
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

// functionDecl matches a function's declaration in the schema: CREATE OR
// REPLACE FUNCTION name(args) RETURNS …; the arguments may span lines.
var functionDecl = regexp.MustCompile(`(?s)CREATE OR REPLACE FUNCTION (distributed_lock_\w+)\((.*?)\)\s*RETURNS`)

// inArguments are a declaration's arguments without its OUT parameters
// (the result columns), on one line.
func inArguments(decl string) string {
	var in []string
	for _, arg := range strings.Split(strings.Join(strings.Fields(decl), " "), ", ") {
		if !strings.HasPrefix(arg, "OUT ") {
			in = append(in, arg)
		}
	}
	return strings.Join(in, ", ")
}

// docs/protocol.md is the contract for clients in other languages: every
// function of the schema is there, with its arguments as the schema
// declares them.
func TestProtocolFunctionsAreDocumented(t *testing.T) {
	page, err := os.ReadFile("../docs/protocol.md")
	if err != nil {
		t.Fatal(err)
	}
	found := 0
	for _, m := range functionDecl.FindAllStringSubmatch(store.PsqlScript(), -1) {
		name, args := m[1], inArguments(m[2])
		found++
		if !strings.Contains(string(page), "`"+name+"("+args+")`") {
			t.Errorf("docs/protocol.md does not show `%s(%s)`", name, args)
		}
	}
	if found < 12 {
		t.Errorf("found %d functions in schema.sql; want at least 12", found)
	}
}
