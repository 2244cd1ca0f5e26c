package anylang

import (
	"os"
	"testing"

	"github.com/lockctl/lockctl/internal/testdb"
)

func TestMain(m *testing.M) {
	code := testdb.Main(m)
	if javaClasses != "" {
		_ = os.RemoveAll(javaClasses)
	}
	os.Exit(code)
}
