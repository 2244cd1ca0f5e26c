package lockmetrics_test

import (
	"os"
	"testing"

	"github.com/lockctl/lockctl/internal/testdb"
)

func TestMain(m *testing.M) { os.Exit(testdb.Main(m)) }
