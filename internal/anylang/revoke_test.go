package anylang

import (
	"bufio"
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/lockctl/lockctl/internal/testdb"
)

// TestJavaLearnsARevoke: a Java holder connected as a role with the service
// grants only (Revoke.java) renews its lease as docs/protocol.md shows,
// reading the revoke pending on it in the same statement. An operator
// revokes it (with a reason): the holder is told who revoked it (their
// role and actor) and why, and releases cleanly; the key is then free.
func TestJavaLearnsARevoke(t *testing.T) {
	client, pool, jdbc := javaAsService(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, client.java, "-cp", client.classpath, "Revoke",
		"url="+jdbc, "key=anylang-revoke", "owner=java-holder", "ttl_ms=60000", "interval_ms=100")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	out := bufio.NewReader(stdout)
	line := func() []string {
		t.Helper()
		l, err := out.ReadString('\n')
		if err != nil {
			t.Fatalf("Revoke.java: %q, %v\n%s", l, err, stderr.String())
		}
		return strings.Fields(l)
	}
	held := line()
	if len(held) != 2 || held[0] != "held" {
		t.Fatalf("Revoke.java: %q; want held TOKEN", held)
	}
	var token int64
	if err := pool.QueryRow(ctx, `SELECT fence_token FROM distributed_lock WHERE lock_key = 'anylang-revoke'`).Scan(&token); err != nil {
		t.Fatal(err)
	}
	if _, err := testdb.Operator(t, "ops").Revoke(ctx, pool, "anylang-revoke", token, "drain the host", -1); err != nil {
		t.Fatal(err)
	}
	var admin string
	if err := pool.QueryRow(ctx, `SELECT session_user`).Scan(&admin); err != nil {
		t.Fatal(err)
	}
	if told := line(); strings.Join(told, " ") != "revoked ops "+admin+" none drain the host" {
		t.Fatalf("Revoke.java: %q; want it told of ops's revoke (role %s), its reason, no deadline", told, admin)
	}
	if released := line(); strings.Join(released, " ") != "released true" {
		t.Fatalf("Revoke.java: %q; want released true", released)
	}
	var free bool
	if err := pool.QueryRow(ctx, `SELECT released_at IS NOT NULL FROM distributed_lock WHERE lock_key = 'anylang-revoke'`).Scan(&free); err != nil || !free {
		t.Fatalf("key released: %v, %v", free, err)
	}
}
