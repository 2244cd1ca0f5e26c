package anylang

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/url"
	"os/exec"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/lockctl/lockctl/internal/history"
	"github.com/lockctl/lockctl/internal/lockdb"
	"github.com/lockctl/lockctl/internal/lockview"
	"github.com/lockctl/lockctl/internal/testdb"
	"github.com/lockctl/lockctl/locker"
)

// TestJavaContendsWithGo runs the Java client (Contend.java, through
// DistributedLock.java) as a separate process while Go lockers take the same
// keys on the same schema, both sides renewing, making fenced writes to the
// guarded table and sometimes outliving their leases; one Java hold in
// three takes two keys at once, all or none (distributed_lock_acquire_all),
// and gives both back in one call. The history of both, with the event log
// and the guarded table, must pass history.Check: tokens strictly increase
// on every key across both languages, no two leases overlap, grants come in
// real-time order, stale writes are refused, and a set's keys are granted
// in one transaction, never one without the other. The Java client
// connects as a role with the service grants only.
func TestJavaContendsWithGo(t *testing.T) {
	res := contention{pauseOneIn: 8, javaSetOneIn: 3}.run(t, compileJava(t))
	report := res.report
	t.Logf("%s", report.Stats)
	report.LogViolations(t)
	if !report.OK() {
		t.Fatalf("%d violations of the lock contract between the Java and Go clients", len(report.Violations))
	}
	for _, op := range res.ops {
		if op.Result == history.Unknown || op.Result == history.Failed {
			t.Errorf("client %d (%s): %s %q ended with an error: %s", op.Client, op.Owner, op.Kind, op.Key, op.Err)
		}
	}

	// The run must have mixed the two: each side granted and wrote, and keys
	// passed from Go to Java and from Java to Go.
	sides := map[string]*sideCounts{"go": {}, "java": {}}
	for _, op := range res.ops {
		s := sides[side(op.Owner)]
		switch {
		case op.Kind == history.Grant && op.Result == history.OK:
			s.grants++
		case op.Kind == history.Write && op.Result == history.OK:
			s.writes++
		}
	}
	handoffs := handoffsBySide(res.events)
	t.Logf("Go: %d grants, %d fenced writes; Java: %d grants, %d fenced writes; handoffs Go→Java %d, Java→Go %d",
		sides["go"].grants, sides["go"].writes, sides["java"].grants, sides["java"].writes,
		handoffs["go→java"], handoffs["java→go"])
	for name, s := range sides {
		if s.grants == 0 || s.writes == 0 {
			t.Errorf("the %s clients made %d grants and %d fenced writes; the run did not exercise them", name, s.grants, s.writes)
		}
	}
	javaSets := map[history.Result]map[string]bool{}
	for _, op := range res.ops {
		if op.Kind == history.Grant && op.Set != "" && side(op.Owner) == "java" {
			if javaSets[op.Result] == nil {
				javaSets[op.Result] = map[string]bool{}
			}
			javaSets[op.Result][op.Set] = true
		}
	}
	t.Logf("Java sets of two keys: %d granted, %d refused", len(javaSets[history.OK]), len(javaSets[history.Held]))
	if len(javaSets[history.OK]) == 0 || report.Stats.SetGrants != len(javaSets[history.OK]) {
		t.Errorf("the Java client was granted %d sets, the checker checked %d; the run did not exercise them",
			len(javaSets[history.OK]), report.Stats.SetGrants)
	}
	if handoffs["go→java"] == 0 || handoffs["java→go"] == 0 {
		t.Errorf("no key passed between the languages in both directions: %v", handoffs)
	}
}

// TestCheckerCatchesJavaWithoutFence proves the cross-language run can
// fail: Java holders that write without distributed_lock_fence, half of them
// after outliving their lease, must be caught writing with an older token
// after a newer holder. Runs repeat on fresh schemas for at most 30s.
func TestCheckerCatchesJavaWithoutFence(t *testing.T) {
	client := compileJava(t)
	deadline := time.Now().Add(30 * time.Second)
	for run := 1; ; run++ {
		res := contention{pauseOneIn: 2, javaSkipsFence: true}.run(t, client)
		for _, v := range res.report.Violations {
			if strings.HasPrefix(v, "stale write") {
				t.Logf("run %d: %d violations, e.g. %s", run, len(res.report.Violations), v)
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no stale write found in %d runs of Java clients that skip the fence", run)
		}
	}
}

// TestCheckerCatchesJavaSplitSets proves the set check can fail across the
// languages: a Java multi-key acquire that takes its keys one call at a
// time grants them in separate transactions, and the checker must report
// the partial grant. Runs repeat on fresh schemas for at most 30s.
func TestCheckerCatchesJavaSplitSets(t *testing.T) {
	client := compileJava(t)
	deadline := time.Now().Add(30 * time.Second)
	for run := 1; ; run++ {
		res := contention{javaSetOneIn: 2, javaSplitsSets: true}.run(t, client)
		for _, v := range res.report.Violations {
			if strings.HasPrefix(v, "partial grant of a set") {
				t.Logf("run %d: %d violations, e.g. %s", run, len(res.report.Violations), v)
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no partial grant found in %d runs of a Java client that splits its sets", run)
		}
	}
}

// contention is one run of Java and Go clients on the same keys.
type contention struct {
	pauseOneIn     int  // one hold in N outlives its lease, on both sides
	javaSetOneIn   int  // one Java hold in N takes two keys at once
	javaSkipsFence bool // the Java side writes without fencing
	javaSplitsSets bool // the Java side takes a set's keys one call at a time
}

type contentionResult struct {
	report history.Report
	ops    []history.Op
	events []lockview.Event
}

// run makes a fresh schema with the guarded table and runs the Java client
// on it, connected directly as a service role (javaRole).
func (c contention) run(t *testing.T, client javaClient) contentionResult {
	t.Helper()
	dsn := testdb.DSN(t)
	pool := testdb.Pool(t, dsn)
	if err := history.CreateGuarded(context.Background(), pool); err != nil {
		t.Fatal(err)
	}
	jdbc, err := jdbcURL(dsn, javaRole(t, pool, dsn))
	if err != nil {
		t.Fatal(err)
	}
	return c.runWith(t, client, pool, jdbc)
}

// javaRole creates the role the Java client connects as: a service role
// (EXECUTE on the functions, no table writes), allowed besides only what the
// guarded table needs: write it, and read the event log for its seen-token
// column.
func javaRole(t *testing.T, admin *pgxpool.Pool, dsn string) string {
	t.Helper()
	return serviceRole(t, admin, dsn,
		"GRANT SELECT, INSERT, UPDATE ON guarded_order TO %s",
		"GRANT INSERT ON guarded_write TO %s",
		"GRANT SELECT ON distributed_lock_event TO %s")
}

// runWith runs the Java client, connected through jdbc, and the Go clients
// on pool for a few seconds on the same keys of one migrated schema that
// has the guarded table, and checks both histories.
func (c contention) runWith(t *testing.T, client javaClient, pool *pgxpool.Pool, jdbc string) contentionResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	const (
		perSide = 4
		ttl     = 300 * time.Millisecond
		hold    = 20 * time.Millisecond
		period  = 3 * time.Second
	)
	keys := []string{"anylang-0", "anylang-1", "anylang-2"}
	// Sets are drawn from one more key, which only sets take: with every
	// client taking single keys as soon as they are free, two of those
	// are rarely free at once.
	setKeys := append(slices.Clone(keys), "anylang-3")
	cmd := exec.CommandContext(ctx, client.java, "-cp", client.classpath, "Contend",
		"url="+jdbc, "clients="+strconv.Itoa(perSide), "client_base=100", "owner_prefix=java",
		"keys="+strings.Join(keys, ","), "duration_ms="+strconv.FormatInt(period.Milliseconds(), 10),
		"ttl_ms="+strconv.FormatInt(ttl.Milliseconds(), 10), "hold_ms="+strconv.FormatInt(hold.Milliseconds(), 10),
		"pause_one_in="+strconv.Itoa(c.pauseOneIn), "set_one_in="+strconv.Itoa(c.javaSetOneIn), "set_keys="+strings.Join(setKeys, ","), "seed=1", "skip_fence="+strconv.FormatBool(c.javaSkipsFence),
		"split_sets="+strconv.FormatBool(c.javaSplitsSets))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	clock := newWallClock()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	out := bufio.NewReader(stdout)
	if line, err := out.ReadString('\n'); err != nil || line != "ready\n" {
		_ = cmd.Wait()
		t.Fatalf("the Java client did not start (%q, %v):\n%s", line, err, stderr.String())
	}

	lk, err := locker.New(locker.Config{TTL: ttl, LogGrants: true})
	if err != nil {
		t.Fatal(err)
	}
	rec := history.NewRecorder()
	until := time.Now().Add(period)
	done := make(chan struct{})
	for i := range perSide {
		g := &goClient{id: i, owner: fmt.Sprintf("go-%d", i), lk: lk, pool: pool, rec: rec, clock: clock,
			keys: keys, ttl: ttl, hold: hold, pauseOneIn: c.pauseOneIn, rnd: rand.New(rand.NewPCG(2, uint64(i)))}
		go func() { g.run(ctx, until); done <- struct{}{} }()
	}
	for range perSide {
		<-done
	}
	rest, err := io.ReadAll(out)
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("the Java client failed: %v\n%s", err, stderr.String())
	}
	javaOps, err := parseJavaOps(rest, clock)
	if err != nil {
		t.Fatal(err)
	}

	ops := append(rec.Ops(), javaOps...)
	obs, err := history.Observe(ctx, pool)
	if err != nil {
		t.Fatal(err)
	}
	return contentionResult{report: history.Check(ops, nil, nil, obs), ops: ops, events: obs.Events}
}

type sideCounts struct{ grants, writes int }

// side is the language of an owner id: "go" or "java".
func side(owner string) string {
	prefix, _, _ := strings.Cut(owner, "-")
	return prefix
}

// handoffsBySide counts consecutive grants of a key (in token order) whose
// owners are of different languages, e.g. "go→java".
func handoffsBySide(events []lockview.Event) map[string]int {
	grants := map[string][]lockview.Event{}
	for _, ev := range events {
		if (ev.Kind == lockdb.EventAcquired || ev.Kind == lockdb.EventStolen) && ev.Owner != nil && ev.Token != nil {
			grants[ev.Key] = append(grants[ev.Key], ev)
		}
	}
	n := map[string]int{}
	for _, gs := range grants {
		sort.Slice(gs, func(i, j int) bool { return *gs[i].Token < *gs[j].Token })
		for i := 1; i < len(gs); i++ {
			from, to := side(*gs[i-1].Owner), side(*gs[i].Owner)
			if from != to {
				n[from+"→"+to]++
			}
		}
	}
	return n
}

// jdbcURL turns a test DSN (a URL or keyword string whose search_path
// points at the test's schema) into a JDBC URL for the same server,
// database and schema, as user.
func jdbcURL(dsn, user string) (string, error) {
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		return "", err
	}
	if strings.HasPrefix(cfg.Host, "/") {
		return "", fmt.Errorf("the test server is on a Unix socket (%s); the JDBC driver needs TCP", cfg.Host)
	}
	q := url.Values{}
	q.Set("user", user)
	q.Set("sslmode", "disable")
	if cfg.TLSConfig != nil {
		q.Set("sslmode", "require")
	}
	if sp := cfg.RuntimeParams["search_path"]; sp != "" {
		q.Set("currentSchema", sp)
	}
	return fmt.Sprintf("jdbc:postgresql://%s/%s?%s", net.JoinHostPort(cfg.Host, strconv.Itoa(int(cfg.Port))),
		url.PathEscape(cfg.Database), q.Encode()), nil
}
