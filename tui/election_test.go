package tui

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/lockctl/lockctl/internal/testdb"
	"github.com/lockctl/lockctl/locker"
	"github.com/lockctl/lockctl/locker/election"
)

// An election key reads as such: the list's OWNER names the leader's value,
// and the detail pane the leader and its term.
func TestElectionKeyShowsItsLeader(t *testing.T) {
	pool := testdb.New(t)
	e, err := election.New(pool, "scheduler:leader", election.Config{Owner: "sched-1", Locker: locker.Config{TTL: time.Minute}})
	if err != nil {
		t.Fatal(err)
	}
	term, err := e.Campaign(context.Background(), "10.0.0.7:8080")
	if err != nil {
		t.Fatal(err)
	}
	defer e.Resign(context.Background())
	m := dbModel(t, pool, Options{}, 140, 35)
	if s := screen(m); !strings.Contains(s, "leader 10.0.0.7:8080 · sched-1") {
		t.Fatalf("the list does not show the leader's value:\n%s", s)
	}
	m, cmd := update(t, m, keyMsg("enter"))
	m = runPoll(t, m, cmd)
	s := screen(m)
	if !strings.Contains(s, "election     leader 10.0.0.7:8080  term "+shownToken(term, false)) {
		t.Fatalf("the detail pane does not show the leader and its term %d:\n%s", term, s)
	}
}
