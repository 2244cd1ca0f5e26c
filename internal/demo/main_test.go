package demo_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/lockctl/lockctl/internal/testdb"
)

func TestMain(m *testing.M) {
	code := testdb.Main(m)
	if binPath != "" {
		_ = os.RemoveAll(filepath.Dir(binPath)) // the binary the end-to-end tests built
	}
	os.Exit(code)
}
