package serve

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lockctl/lockctl/internal/sshtest"
	"github.com/lockctl/lockctl/internal/testdb"
	"github.com/lockctl/lockctl/locker"
)

// An operator whose key is removed from authorized_keys while its console
// waits on "Force-expire this lock?": the session ends at the server's
// next check of the file, the client is told why, and the y it sends
// after changes nothing in the database.
func TestRemovedOperatorKeyCannotAct(t *testing.T) {
	dsn := testdb.DSN(t)
	db := testdb.Pool(t, dsn)
	lk := testdb.Locker(t, locker.Config{TTL: time.Minute})
	testdb.MustAcquire(t, lk, db, "ssh:acted", "worker-1")
	s := startServe(t, dsn)

	op := s.pane(s.operator)
	op.WaitFor("over SSH as alice (operator)", within)
	op.WaitFor("▶ ssh:acted", within)
	op.Keys("x")
	op.WaitFor("Force-expire this lock?", within)
	before := databaseState(t, db)

	sshtest.WriteFile(t, filepath.Join(s.dir, "authorized_keys"), fmt.Sprintf("role=\"viewer\",actor=\"bob\" %s\n", s.viewer.Pub))
	screen := op.WaitFor("exit status 1", within)
	if !strings.Contains(screen, "removed from the server's authorized keys") {
		t.Errorf("the operator is not told why the session ended:\n%s", screen)
	}
	op.Keys("y")
	// The server logs why once the session's program has returned: nothing
	// it does comes after that.
	if !testdb.Within(within, func() bool { return strings.Contains(s.log.String(), `reason="key no longer authorized"`) }) {
		t.Errorf("the server log does not say why the session ended:\n%s", s.log)
	}
	if after := databaseState(t, db); after != before {
		t.Fatalf("the removed operator's key changed the database:\nbefore %s\nafter  %s", before, after)
	}
}
