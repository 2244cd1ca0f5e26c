package cli_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/lockctl/lockctl/internal/testdb"
)

// kept5m is ls's row of a key kept about five minutes more: its state, then
// what is left of the period.
var kept5m = regexp.MustCompile(`report +node-a +[0-9]+ +kept +kept (5m|4m5[0-9]s) `)

// Two runs in a row of the same job with --at-least, as two nodes' timers
// would start them: the first runs CMD and releases, the second is refused
// (exit 3, the key kept until the first's at-least point) and does not run
// CMD; ls shows the key kept until then. Once the period has passed on
// the database's clock the next run runs CMD.
func TestRunAtLeastRunsTheCommandOncePerPeriod(t *testing.T) {
	t.Parallel()
	d := newDB(t)
	dir := t.TempDir()
	runs := filepath.Join(dir, "runs")
	cmd := script(dir, `echo "$LOCKCTL_OWNER" >> "`+runs+`"`)
	ran := func() string {
		b, _ := os.ReadFile(runs)
		return strings.Join(strings.Fields(string(b)), " ")
	}
	d.expect(0, append([]string{"run", "report", "--owner", "node-a", "--at-least", "5m", "--"}, cmd...)...)
	r := d.expect(3, append([]string{"run", "report", "--owner", "node-b", "--at-least", "5m", "--"}, cmd...)...)
	if !strings.Contains(r.stderr, "report is kept until ") || !strings.Contains(r.stderr, "released by node-a") {
		t.Errorf("the second run's refusal: %s", r)
	}
	if got := ran(); got != "node-a" {
		t.Fatalf("CMD ran for %q; want node-a only", got)
	}
	if keys := lsKeys(t, d, "--state", "kept"); keys != "report" {
		t.Errorf("ls --state kept lists %q; want report", keys)
	}
	rows := lsJSON(t, d)
	if len(rows) != 1 || rows[0].State != "kept" || rows[0].KeptUntil == nil ||
		!rows[0].KeptUntil.Equal(rows[0].AcquiredAt.Add(5*time.Minute)) {
		t.Fatalf("ls --json %+v; want report kept until its grant + 5m", rows)
	}
	if got := d.json(3, "acquire", "report", "--owner", "node-c"); got.Error != "kept" || got.DelayUntil == nil ||
		!got.DelayUntil.Equal(*rows[0].KeptUntil) {
		t.Errorf("acquire while kept = %+v; want error kept until %v", got, *rows[0].KeptUntil)
	}
	if r := d.expect(0, "ls"); !kept5m.MatchString(r.stdout) {
		t.Errorf("ls says %q; want the time it is kept for", r.stdout)
	}

	d.onConn(func(conn *pgx.Conn) { testdb.Clock(t, conn).Advance(5 * time.Minute) })
	d.expect(0, append([]string{"run", "report", "--owner", "node-b", "--at-least", "5m", "--"}, cmd...)...)
	if got := ran(); got != "node-a node-b" {
		t.Errorf("CMD ran for %q; want node-a, then node-b after the period", got)
	}
}

// acquire --at-least puts the point in the row, so a later release by
// another process (lockctl release) keeps the key; the flag is checked.
func TestAcquireAtLeastThenRelease(t *testing.T) {
	t.Parallel()
	d := newDB(t)
	for _, bad := range [][]string{{"--at-least", "-1s"}, {"--at-least", "400d"}, {"--at-least", "1m", "--shared"}} {
		r := d.expect(2, append([]string{"acquire", "k", "--owner", "a"}, bad...)...)
		if !strings.Contains(r.stderr, "--at-least") {
			t.Errorf("acquire %v: %s", bad, r)
		}
	}
	got := d.json(0, "acquire", "k", "--owner", "a", "--at-least", "1m")
	d.expect(0, "release", "k", "--owner", "a", "--token", tokenArg(got.Token))
	if refused := d.json(3, "acquire", "k", "--owner", "b"); refused.Error != "kept" {
		t.Errorf("acquire after an early release = %+v; want kept", refused)
	}
}
