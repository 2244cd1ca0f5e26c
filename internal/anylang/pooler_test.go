package anylang

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/lockctl/lockctl/internal/history"
	"github.com/lockctl/lockctl/internal/pgtemp"
	"github.com/lockctl/lockctl/internal/testdb"
	"github.com/lockctl/lockctl/locker"
)

// TestJavaThroughTransactionPooler runs the contention test with the Java
// client behind PgBouncer in transaction mode, the way services are often
// deployed, four Java connections sharing two server connections. The
// functions need nothing of the session, so the contract holds as it does
// directly. The JDBC URL sets prepareThreshold=0: the driver otherwise
// switches to named server-side statements after five uses, which a pooler
// without prepared statement support (PgBouncer before 1.21) hands to
// other server connections ("prepared statement "S_1" already exists").
func TestJavaThroughTransactionPooler(t *testing.T) {
	client := compileJava(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	in := testdb.Server(t)
	dsn := testdb.WithParam(in.DSN(""), "search_path", "public")
	pool := testdb.Pool(t, dsn)
	if err := locker.Migrate(ctx, pool); err != nil {
		t.Fatal(err)
	}
	if err := history.CreateGuarded(ctx, pool); err != nil {
		t.Fatal(err)
	}
	role := javaRole(t, pool, dsn)
	b, err := pgtemp.StartBouncer(ctx, in, pgtemp.BouncerOptions{PoolMode: "transaction", PoolSize: 2, Users: []string{role}})
	if errors.Is(err, pgtemp.ErrNoBouncer) {
		testdb.Unavailable(t, "%v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	jdbc, err := jdbcURL(b.DSN(""), role)
	if err != nil {
		t.Fatal(err)
	}

	res := contention{pauseOneIn: 8}.runWith(t, client, pool, jdbc+"&prepareThreshold=0")
	t.Logf("%s", res.report.Stats)
	res.report.LogViolations(t)
	if !res.report.OK() {
		t.Fatalf("%d violations of the lock contract with the Java client behind the pooler", len(res.report.Violations))
	}
	javaGrants := 0
	for _, op := range res.ops {
		if op.Result == history.Unknown || op.Result == history.Failed {
			t.Errorf("client %d (%s): %s %q ended with an error: %s", op.Client, op.Owner, op.Kind, op.Key, op.Err)
		}
		if side(op.Owner) == "java" && op.Kind == history.Grant && op.Result == history.OK {
			javaGrants++
		}
	}
	if javaGrants == 0 {
		t.Error("the Java clients behind the pooler were granted nothing")
	}
}
