package roles

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// protocolRowRE matches a row of a table of docs/protocol.md that documents
// a function: its name.
var protocolRowRE = regexp.MustCompile("(?m)^\\| `(distributed_lock_[a-z_]+)\\(")

// publicFunctions are granted to PUBLIC by the schema itself, not by
// lockctl grant (store/sql/functions/99_privileges.sql).
var publicFunctions = []string{"distributed_lock_now"}

// TestProtocolTablesAreTheEntryPoints: the tables of docs/protocol.md are
// the protocol, the functions some kind of role is granted (lockctl grant,
// and the clock every role may call), and nothing else: a helper the
// protocol calls as its owner is listed apart, never in a table, and every
// granted function has its row.
func TestProtocolTablesAreTheEntryPoints(t *testing.T) {
	text, err := os.ReadFile(filepath.Join("..", "..", "docs", "protocol.md"))
	if err != nil {
		t.Fatal(err)
	}
	granted := slices.Clone(publicFunctions)
	for _, sig := range slices.Concat(ownerFunctions, operatorFunctions, readerRules, readerFunctions) {
		name, _, _ := strings.Cut(sig, "(")
		granted = append(granted, name)
	}
	inTables := map[string]bool{}
	for _, m := range protocolRowRE.FindAllStringSubmatch(string(text), -1) {
		inTables[m[1]] = true
		if !slices.Contains(granted, m[1]) {
			t.Errorf("docs/protocol.md has %s in a table, but no role is granted it: a helper is listed apart", m[1])
		}
	}
	for _, name := range granted {
		if !inTables[name] {
			t.Errorf("%s is granted, but has no row in docs/protocol.md's tables", name)
		}
	}
}
