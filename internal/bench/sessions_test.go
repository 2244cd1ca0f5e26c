package bench

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/lockctl/lockctl/internal/testdb"
)

// A short sessions run: both series kept every lease, one session sent a
// heartbeat per interval while one keepalive per lease sent a renewal per
// lease per interval, and the report says so. No timing is asserted.
func TestSessionsScenario(t *testing.T) {
	srv := testdb.Server(t)
	const leases = 40
	// Two counts: the second series takes the keys the first gave back.
	rep, err := RunSessions(context.Background(), srv.DSN(""), SessionsOptions{Leases: []int{leases, leases + 10},
		TTL: 600 * time.Millisecond, For: 600 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	per, okPer := rep.result(KeepPerLease, leases)
	sess, okSess := rep.result(KeepSession, leases)
	if !okPer || !okSess {
		t.Fatalf("results = %+v; want both series", rep.Results)
	}
	// Three intervals of 200 ms: about 3 renewals per lease, 3 heartbeats.
	if per.Lost != 0 || sess.Lost != 0 {
		t.Errorf("lost leases: %d with a keepalive each, %d with a session", per.Lost, sess.Lost)
	}
	if per.Statements < leases || sess.Statements > 6 || sess.Statements < 1 {
		t.Errorf("statements: %d with a keepalive per lease (want at least %d), %d with a session (want 1 to 6)",
			per.Statements, leases, sess.Statements)
	}
	var md bytes.Buffer
	if err := rep.WriteMarkdown(&md); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"| one session | 40 |", "| one keepalive per lease | 40 |", "40 leases: one per lease sends"} {
		if !strings.Contains(md.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, md.String())
		}
	}
}
