package tui

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/lockctl/lockctl/internal/contexts/contextstest"
	"github.com/lockctl/lockctl/internal/testdb"
)

// TestContextsInTmux runs the real binary with a contexts file in a temp
// config directory: it opens the default context (its name in the
// header), c lists the contexts, and choosing the read-only one moves the
// console to its database with every action gone.
func TestContextsInTmux(t *testing.T) {
	stagingDSN, prodDSN := testdb.DSN(t), testdb.DSN(t)
	acquire(t, testdb.Pool(t, stagingDSN), "staging:only", "worker-s", 5*time.Minute)
	acquire(t, testdb.Pool(t, prodDSN), "prod:only", "worker-p", 5*time.Minute)
	config := contextstest.ConfigDir(t, fmt.Sprintf(`{"default": "staging", "contexts": [
		{"name": "staging", "dsn": %s, "color": "green"},
		{"name": "prod", "dsn": %s, "color": "red", "read_only": true}]}`,
		contextstest.Quote(stagingDSN), contextstest.Quote(prodDSN)), 0o600)
	p := startPaneEnv(t, 120, 35, []string{"XDG_CONFIG_HOME=" + config}, "--refresh", "300ms")
	s := p.waitFor("staging:only", 10*time.Second)
	if header := strings.SplitN(s, "\n", 2)[0]; !strings.Contains(header, " staging ") {
		t.Fatalf("the default context's name is not in the header: %q", header)
	}
	p.keys("c")
	s = p.waitFor("Switch context", 5*time.Second)
	if !strings.Contains(s, "read-only") || !strings.Contains(s, "in use") {
		t.Fatalf("the picker:\n%s", s)
	}
	p.keys("Down", "Enter")
	s = p.waitFor("prod:only", 5*time.Second)
	if header := strings.SplitN(s, "\n", 2)[0]; !strings.Contains(header, " prod ") || !strings.Contains(header, "read-only context") {
		t.Fatalf("after the switch the header is %q", header)
	}
	if strings.Contains(s, "staging:only") || strings.Contains(s, "x expire") {
		t.Fatalf("after switching to the read-only context:\n%s", s)
	}
	// Keys are handled in order, and an open dialog takes every key: the
	// help that ? opens after x shows that x opened none.
	p.keys("x", "?")
	s = p.waitFor("esc or ? closes this help", 5*time.Second)
	if strings.Contains(s, "Force-expire") {
		t.Fatalf("x opened a dialog on a read-only context:\n%s", s)
	}
	p.keys("Escape")
	p.waitFor("prod:only", 5*time.Second)
	p.keys("q")
	p.waitFor("exit status 0", 5*time.Second)
}
