package roles_test

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/lockctl/lockctl/internal/roles"
)

// The README's "Least privilege" section shows these statements verbatim; a
// change to a grant set must change the documentation with it.
func TestReadmeShowsTheGrantsAsTheyAre(t *testing.T) {
	_, file, _, _ := runtime.Caller(0)
	readme, err := os.ReadFile(filepath.Join(filepath.Dir(file), "..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, kind := range roles.Kinds {
		sql, err := roles.GrantSQL(kind, "public", "lockctl_"+string(kind))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(readme), "```sql\n"+sql+"```") {
			t.Errorf("README.md does not show the %s grants as roles.GrantSQL prints them:\n%s", kind, sql)
		}
	}
	if _, err := roles.GrantSQL("admin", "public", "x"); err == nil {
		t.Error("GrantSQL accepted an unknown kind")
	}
}
