package tui

import (
	"os"
	"testing"

	"github.com/lockctl/lockctl/internal/testdb"
)

func TestMain(m *testing.M) {
	code := testdb.Main(m)
	removeSharedBinary()
	os.Exit(code)
}
