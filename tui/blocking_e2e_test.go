package tui

import (
	"context"
	"testing"
	"time"

	"github.com/lockctl/lockctl/internal/testdb"
	"github.com/lockctl/lockctl/store"
)

// TestBlockingPageInTmux drives the real binary in a terminal: b shows two
// chains with the cursor on the first wait, ↓ moves it to the second,
// enter opens the detail page of the key that wait is for, and esc comes
// back to the blocking page with the cursor on the same wait.
func TestBlockingPageInTmux(t *testing.T) {
	dsn := testdb.DSN(t)
	pool := testdb.Pool(t, dsn)
	for _, c := range []struct{ key, holder, waiter string }{
		{"deploy:prod", "holder-1", "waiter-1"},
		{"cache:warm", "holder-2", "waiter-2"},
	} {
		acquire(t, pool, c.key, c.holder, 5*time.Minute)
		if _, _, err := store.Enqueue(context.Background(), pool, store.QueueParams{
			GrantParams: store.GrantParams{Key: c.key, Owner: c.waiter, TTL: time.Minute},
			ClaimWindow: time.Second, SeenFor: 5 * time.Minute,
		}); err != nil {
			t.Fatal(err)
		}
	}
	p := startPane(t, 120, 30, "--dsn", dsn, "--refresh", "300ms")
	p.waitFor("deploy:prod", 10*time.Second)
	p.keys("b")
	p.waitFor("▶ └─ waiter-1  waits", 5*time.Second)
	p.keys("Down")
	p.waitFor("▶ └─ waiter-2  waits", 3*time.Second)
	p.keys("Enter")
	p.waitFor("Lock cache:warm", 3*time.Second)
	p.waitFor(" 1. waiter-2  waiting", 3*time.Second)
	p.keys("Escape")
	p.waitFor("▶ └─ waiter-2  waits", 3*time.Second)
	p.keys("q")
	p.waitFor("exit status 0", 5*time.Second)
}
