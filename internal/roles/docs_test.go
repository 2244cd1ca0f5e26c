package roles_test

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/lockctl/lockctl/internal/roles"
)

// docs/security.md, "Least privilege", shows these statements verbatim; a
// change to a grant set must change the documentation with it.
func TestDocsShowTheGrantsAsTheyAre(t *testing.T) {
	_, file, _, _ := runtime.Caller(0)
	page, err := os.ReadFile(filepath.Join(filepath.Dir(file), "..", "..", "docs", "security.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, kind := range roles.Kinds {
		sql, err := roles.GrantSQL(kind, "public", "lockctl_"+string(kind))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(page), "```sql\n"+sql+"```") {
			t.Errorf("docs/security.md does not show the %s grants as roles.GrantSQL prints them:\n%s", kind, sql)
		}
	}
	if _, err := roles.GrantSQL("admin", "public", "x"); err == nil {
		t.Error("GrantSQL accepted an unknown kind")
	}
}
