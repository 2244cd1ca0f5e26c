package anylang

import (
	"context"
	"testing"
	"time"

	"github.com/lockctl/lockctl/internal/lockdb"
	"github.com/lockctl/lockctl/internal/testdb"
	"github.com/lockctl/lockctl/locker"
	"github.com/lockctl/lockctl/locker/election"
)

// TestJavaCampaignsBesideGo: a Java candidate (Elect.java, SQL alone, as a
// role with the service grants) leads and proclaims; a Go observer hears its
// term and value; a Go candidate waits, and leads the moment Java resigns,
// with a larger term; Java's proclamation after resigning is refused.
func TestJavaCampaignsBesideGo(t *testing.T) {
	client, pool, jdbc := javaAsService(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	observer, err := election.New(pool, "anylang-leader", election.Config{Recheck: time.Minute,
		Listen: lockdb.ConnectWith(pool.Config().ConnConfig)})
	if err != nil {
		t.Fatal(err)
	}
	seen := observer.Observe(ctx)

	java := startJava(t, ctx, client, "Elect", "url="+jdbc, "key=anylang-leader", "owner=java-1", "value=java:8080", "ttl_ms=60000")
	f := java.line()
	if len(f) != 2 || f[0] != "won" {
		java.fail("Elect.java: %q; want won TOKEN", f)
	}
	javaTerm := java.int(f[1])
	if f := java.line(); len(f) != 2 || f[1] != "true" {
		java.fail("Elect.java: %q; want proclaimed true", f)
	}
	if l := <-seen; l.Owner != "java-1" || l.Term != javaTerm || l.Value != "java:8080" {
		t.Fatalf("the Go observer saw %+v; want java-1 at term %d", l, javaTerm)
	}

	goCandidate, err := election.New(pool, "anylang-leader", election.Config{Owner: "go-1", Locker: locker.Config{TTL: time.Minute}})
	if err != nil {
		t.Fatal(err)
	}
	defer goCandidate.Resign(context.Background())
	won := make(chan int64, 1)
	go func() {
		term, err := goCandidate.Campaign(ctx, "go:8080")
		if err != nil {
			t.Error(err)
		}
		won <- term
	}()
	testdb.WaitForWaiter(t, pool, "anylang-leader", "go-1")
	java.send("resign")
	if f := java.line(); len(f) != 2 || f[1] != "true" {
		java.fail("Elect.java: %q; want resigned true", f)
	}
	goTerm := <-won
	if goTerm <= javaTerm {
		t.Fatalf("Go's term %d after Java's %d", goTerm, javaTerm)
	}
	java.send("proclaim forged")
	if f := java.line(); len(f) != 2 || f[1] != "false" {
		java.fail("Elect.java: %q; want its proclamation refused after resigning", f)
	}
	java.send("leader")
	if f := java.line(); len(f) != 4 || f[1] != "go-1" || java.int(f[2]) != goTerm || f[3] != "go:8080" {
		java.fail("Elect.java read the leader %q; want go-1 at term %d", f, goTerm)
	}
	if l := <-seen; l.Owner != "go-1" || l.Term != goTerm {
		t.Fatalf("the Go observer saw %+v; want go-1 at term %d", l, goTerm)
	}
	java.send("quit")
}
