package serve

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/lockctl/lockctl/internal/contexts/contextstest"
	"github.com/lockctl/lockctl/internal/testdb"
	"github.com/lockctl/lockctl/locker"
)

// Served under a read-only context, every session is read-only, an
// operator's too: its help offers no action and its action keys change
// nothing.
func TestServeUnderReadOnlyContext(t *testing.T) {
	dsn := testdb.DSN(t)
	db := testdb.Pool(t, dsn)
	lk := testdb.Locker(t, locker.Config{TTL: time.Minute})
	testdb.MustAcquire(t, lk, db, "ssh:watched", "worker-2")
	config := contextstest.ConfigDir(t, fmt.Sprintf(`{"contexts": [{"name": "prod", "dsn": %s, "read_only": true}]}`,
		contextstest.Quote(dsn)), 0o600)
	s := startServeIn(t, []string{"XDG_CONFIG_HOME=" + config}, "--context", "prod")

	op := s.pane(s.operator)
	op.WaitFor("over SSH as alice (operator)", within)
	screen := op.WaitFor("ssh:watched", within)
	if strings.Contains(screen, "x expire") || strings.Contains(screen, "d release") {
		t.Errorf("the operator's help offers actions under a read-only context:\n%s", screen)
	}
	before := databaseState(t, db)
	op.Keys("/", "ssh:watched", "Enter")
	op.WaitFor("row 1 of 1", within)
	op.Keys("x", "y", "d", "y", "r", "a", "y")
	op.Keys("?")
	op.WaitFor("Read-only console", within)
	if after := databaseState(t, db); after != before {
		t.Fatalf("the operator's keys changed the database under a read-only context:\nbefore %s\nafter  %s", before, after)
	}
}
