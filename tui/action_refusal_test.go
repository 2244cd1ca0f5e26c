package tui

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/lockctl/lockctl/internal/testdb"
	"github.com/lockctl/lockctl/locker"
)

// The console's flash after an action says what the refusal was: an
// acquire refused because another owner holds the key names that holder,
// and a renew of a lease that is gone says it has none. Both are a
// *locker.Error: its Kind tells them apart.
func TestActionFlashTellsHeldFromNotHeld(t *testing.T) {
	pool := testdb.New(t)
	ctx := context.Background()
	lk := testdb.Locker(t, locker.Config{TTL: time.Minute})
	lease := testdb.MustAcquire(t, lk, pool, "k", "worker-1")

	_, err := testdb.Try(ctx, lk, pool, "k", "console")
	if f := actionResult(actionDoneMsg{kind: actAcquire, key: "k", err: err}); !strings.Contains(f.text, "not acquired: held by worker-1") {
		t.Errorf("flash after a refused acquire: %q; want the holder named", f.text)
	}

	_, err = testdb.One(lk.Renew(ctx, pool, locker.Lease{Key: "k", Owner: "worker-1", Token: lease.Token + 1}))
	if f := actionResult(actionDoneMsg{kind: actRenew, key: "k", token: lease.Token + 1, err: err}); !strings.Contains(f.text, "renew refused") {
		t.Errorf("flash after a refused renew: %q; want it refused", f.text)
	}
}
