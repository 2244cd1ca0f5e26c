package election_test

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/lockctl/lockctl/internal/testdb"
	"github.com/lockctl/lockctl/locker"
	"github.com/lockctl/lockctl/locker/election"
)

// Two candidates for one key: the first leads, with its term (the lease's
// fencing token) and value readable by anyone; when it resigns, the next
// campaign wins at once with a later term.
func ExampleElection_Campaign() {
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, testdb.ExampleDSN())
	if err != nil {
		panic(err)
	}
	defer pool.Close()
	cfg := election.Config{Locker: locker.Config{TTL: 10 * time.Second}}
	a, err := election.New(pool, "scheduler:leader", withOwner(cfg, "scheduler-a"))
	if err != nil {
		panic(err)
	}
	b, err := election.New(pool, "scheduler:leader", withOwner(cfg, "scheduler-b"))
	if err != nil {
		panic(err)
	}
	first, err := a.Campaign(ctx, "10.0.0.1:8080")
	if err != nil {
		panic(err)
	}
	leader, err := election.Read(ctx, pool, "scheduler:leader")
	if err != nil {
		panic(err)
	}
	fmt.Println("leader:", leader.Owner, leader.Value)
	if err := a.Resign(ctx); err != nil {
		panic(err)
	}
	second, err := b.Campaign(ctx, "10.0.0.2:8080")
	if err != nil {
		panic(err)
	}
	fmt.Println("then:", b.Owner(), "with a later term:", second > first)
	if err := b.Resign(ctx); err != nil {
		panic(err)
	}
	// Output:
	// leader: scheduler-a 10.0.0.1:8080
	// then: scheduler-b with a later term: true
}

func withOwner(cfg election.Config, owner string) election.Config {
	cfg.Owner = owner
	return cfg
}
