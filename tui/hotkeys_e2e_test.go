package tui

import (
	"testing"
	"time"

	"github.com/lockctl/lockctl/internal/testdb"
)

// TestHotKeysPageInTmux drives the real binary in a terminal: h ranks the
// keys of the last 15 minutes from the event log, w switches to the hour
// (a key waited for 50 minutes ago comes first; the cursor stays on the
// key it was on), enter opens that key's
// detail page with its waits over the hour, and esc comes back.
func TestHotKeysPageInTmux(t *testing.T) {
	dsn := testdb.DSN(t)
	pool := testdb.Pool(t, dsn)
	testdb.LogEvent(t, pool, 50*time.Minute, "old:hot", "stolen", 1, `{"waited_ms": 600000}`)
	testdb.LogEvent(t, pool, 10*time.Minute, "queue:a", "acquired", 2, `{"waited_ms": 4000}`)
	testdb.LogEvent(t, pool, 20*time.Second, "steal:b", "stolen", 4, `{}`)
	acquire(t, pool, "billing:nightly", "worker-3", 5*time.Minute)
	p := startPane(t, 120, 35, "--dsn", dsn, "--refresh", "300ms")
	p.waitFor("billing:nightly", 10*time.Second)
	p.keys("h")
	p.waitFor("Hot keys — last 15m · ranked by total wait · 2 keys", 5*time.Second)
	p.waitFor("▶ queue:a ", 3*time.Second)
	p.keys("w")
	p.waitFor("Hot keys — last 1h", 3*time.Second)
	p.waitFor("▶ queue:a ", 3*time.Second) // the cursor stays on its key
	p.waitFor("  old:hot ", 3*time.Second)
	p.keys("g")
	p.waitFor("▶ old:hot ", 3*time.Second)
	p.keys("Enter")
	p.waitFor("Lock old:hot", 3*time.Second)
	p.waitFor("Waits and holds — last 1h", 3*time.Second)
	p.waitFor("p99 10m00s", 3*time.Second)
	p.keys("Escape")
	p.waitFor("▶ old:hot ", 3*time.Second)
	p.keys("q")
	p.waitFor("exit status 0", 5*time.Second)
}
