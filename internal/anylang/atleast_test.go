package anylang

import (
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// TestJavaHoldsAtLeastAPeriod: a Java client connected as a role with the
// service grants only (AtLeast.java) holds its lease at least a minute
// through SQL (distributed_lock_hold_at_least), releases at once, and a
// second owner's attempt is refused until the hold's at-least point: the
// key reads as kept.
func TestJavaHoldsAtLeastAPeriod(t *testing.T) {
	client, pool, jdbc := javaAsService(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, client.java, "-cp", client.classpath, "AtLeast",
		"url="+jdbc, "key=anylang-at-least", "owner=node-a", "other_owner=node-b", "ttl_ms=60000", "at_least_ms=60000").CombinedOutput()
	if err != nil {
		t.Fatalf("AtLeast.java: %v\n%s", err, out)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) != 3 || !strings.HasPrefix(lines[0], "held ") || lines[1] != "released true" || lines[2] != "refused delayed true" {
		t.Fatalf("AtLeast.java printed %q; want held TOKEN, released true, refused delayed true (until the at-least point)", lines)
	}
	var state string
	if err := pool.QueryRow(ctx, `SELECT state FROM distributed_lock_state WHERE lock_key = 'anylang-at-least'`).Scan(&state); err != nil || state != "kept" {
		t.Fatalf("the key's state: %q, %v; want kept", state, err)
	}
}
