package cli_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/lockctl/lockctl/internal/testdb"
)

type leaderOut struct {
	Key, Owner, Value string
	Term              int64
}

func (d db) leader(want int) leaderOut {
	d.t.Helper()
	r := d.expect(want, "leader", "sched", "--json")
	var l leaderOut
	if want == 0 {
		if err := json.Unmarshal([]byte(r.stdout), &l); err != nil {
			d.t.Fatalf("leader --json printed %q: %v", r.stdout, err)
		}
	}
	return l
}

// The first candidate runs its command while it leads; the second waits,
// and runs its own the moment the first's ends (its resignation hands over).
// leader shows each in turn, and leader --watch reports both, in term order.
func TestElectRunsCommandWhileLeadingAndHandsOver(t *testing.T) {
	t.Parallel()
	d := newDB(t)
	dir := t.TempDir()
	d.expect(4, "leader", "sched")
	watch := d.start("leader", "sched", "--watch", "--json")
	defer watch.cmd.Process.Kill()
	a := d.start(append([]string{"elect", "sched", "--value", "10.0.0.1", "--owner", "a", "--"},
		script(dir, `echo $LOCKCTL_TOKEN > $DIR/a; while [ ! -e $DIR/stop-a ]; do sleep 0.05; done`)...)...)
	a.waitForFile(filepath.Join(dir, "a"))
	first := d.leader(0)
	if first.Owner != "a" || first.Value != "10.0.0.1" || first.Term <= 0 {
		t.Fatalf("leader = %+v; want a leading with its value", first)
	}
	b := d.start(append([]string{"elect", "sched", "--value", "10.0.0.2", "--owner", "b", "--"},
		script(dir, `touch $DIR/b; while [ ! -e $DIR/stop-b ]; do sleep 0.05; done`)...)...)
	d.onConn(func(conn *pgx.Conn) { testdb.WaitForWaiter(t, conn, "sched", "b") })
	if _, err := os.Stat(filepath.Join(dir, "b")); err == nil {
		t.Fatal("b's command ran while a leads")
	}
	if err := os.WriteFile(filepath.Join(dir, "stop-a"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if r := a.wait(); r.code != 0 {
		t.Fatalf("a: %s", r)
	}
	b.waitForFile(filepath.Join(dir, "b"))
	watch.waitForOutput(`"owner":"b"`)
	if l := d.leader(0); l.Owner != "b" || l.Value != "10.0.0.2" || l.Term <= first.Term {
		t.Fatalf("leader = %+v; want b at a term above %d", l, first.Term)
	}
	if err := os.WriteFile(filepath.Join(dir, "stop-b"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if r := b.wait(); r.code != 0 {
		t.Fatalf("b: %s", r)
	}
	d.expect(4, "leader", "sched")
	var terms []int64
	for _, line := range strings.Split(strings.TrimSpace(watch.stdout.String()), "\n") {
		var l leaderOut
		if err := json.Unmarshal([]byte(line), &l); err != nil {
			t.Fatalf("leader --watch printed %q: %v", line, err)
		}
		terms = append(terms, l.Term)
	}
	if len(terms) != 2 || terms[0] != first.Term || terms[1] <= terms[0] {
		t.Fatalf("leader --watch reported terms %v; want %d, then a larger one", terms, first.Term)
	}
}

// A leader whose lease is force-expired stops its command and exits 4.
func TestElectStopsCommandWhenLeadershipIsLost(t *testing.T) {
	t.Parallel()
	d := newDB(t)
	dir := t.TempDir()
	p := d.start(append([]string{"elect", "sched", "--value", "v", "--ttl", "3s", "--grace", "20s", "--"},
		script(dir, `trap 'exit 9' TERM; touch $DIR/started; while :; do sleep 0.1; done`)...)...)
	p.waitForFile(filepath.Join(dir, "started"))
	d.json(0, "expire", "sched", "--actor", "ops")
	r := p.wait()
	if r.code != 4 || !strings.Contains(r.stderr, "lost the leadership of sched") || !strings.Contains(r.stderr, "force-expired by ops") {
		t.Fatalf("%s\nwant exit 4, the loss explained", r)
	}
}
