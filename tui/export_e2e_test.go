package tui

import (
	"encoding/csv"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lockctl/lockctl/internal/testdb"
)

// TestExportInTmux: in the real binary, E proposes a file in the current
// directory, and writing it puts the table there as CSV; the message line
// says where.
func TestExportInTmux(t *testing.T) {
	dsn := testdb.DSN(t)
	pool := testdb.Pool(t, dsn)
	acquire(t, pool, "billing:nightly", "worker-1", 5*time.Minute)
	acquire(t, pool, "@evil", "worker-2", 5*time.Minute)
	dir := t.TempDir()
	path := filepath.Join(dir, "incident.csv")
	p := startPane(t, 120, 35, "--dsn", dsn, "--refresh", "300ms")
	p.waitFor("billing:nightly", 10*time.Second)
	p.keys("E")
	p.waitFor("Export the lock table (2 locks), sorted by key", 5*time.Second)
	p.waitFor("lockctl-locks-", 5*time.Second)
	p.keys("C-u")
	p.keys("-l", path)
	p.keys("Enter")
	p.waitFor("✓ wrote 2 rows of locks to "+path, 5*time.Second)
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	recs, err := csv.NewReader(f).ReadAll()
	if err != nil || len(recs) != 3 || recs[1][0] != "'@evil" || recs[2][0] != "billing:nightly" {
		t.Fatalf("%s: %q, %v", path, recs, err)
	}
	if !strings.HasPrefix(strings.Join(recs[0], ","), "lock_key,owner_id,") {
		t.Fatalf("header %q", recs[0])
	}
	p.keys("q")
	p.waitFor("exit status 0", 5*time.Second)
}
