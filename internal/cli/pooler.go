package cli

import (
	"context"
	"strings"
	"sync"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/lockctl/lockctl/store"
)

// fitPooler makes a pool built from cfg work through the connection pooler
// it may reach the server through. Behind one, pgx's default query exec
// mode (named prepared statements, cached per connection) fails at random
// under transaction pooling, so when the connection string chose no mode,
// the pool's connections use exec mode, which sends each statement whole.
// A mode the connection string chose is kept (PgBouncer 1.21+ with
// max_prepared_statements runs the default mode), except describe_exec,
// which a transaction pooler can make bind one client's arguments to
// another client's statement: that is refused.
//
// Whether there is a pooler is learnt on a probe connection just before
// the pool's first connection (so the console can still start while the
// database is down); a probe that cannot connect decides nothing, and the
// next connection tries again.
func fitPooler(cfg *pgxpool.Config, dsn string) {
	chosen := strings.Contains(dsn, "default_query_exec_mode")
	if chosen && cfg.ConnConfig.DefaultQueryExecMode != pgx.QueryExecModeDescribeExec {
		return // the user's choice, safe or deliberate
	}
	probe := &poolerProbe{}
	cfg.BeforeConnect = func(ctx context.Context, cc *pgx.ConnConfig) error {
		if pooled, err := probe.behindPooler(ctx, cc); err != nil || !pooled {
			return nil // a server that fails the probe fails the connection too, with its own error
		}
		if chosen {
			return usagef("default_query_exec_mode=describe_exec is unsafe behind a connection pooler (a transaction pooler can bind one client's arguments to another's statement): use default_query_exec_mode=exec (see docs/pooling.md)")
		}
		cc.DefaultQueryExecMode = pgx.QueryExecModeExec
		return nil
	}
}

// poolerProbe remembers whether a pool's server is behind a pooler once a
// probe connection has told.
type poolerProbe struct {
	mu      sync.Mutex
	decided bool
	pooled  bool
}

func (p *poolerProbe) behindPooler(ctx context.Context, cc *pgx.ConnConfig) (bool, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.decided {
		return p.pooled, nil
	}
	conn, err := pgx.ConnectConfig(ctx, cc.Copy())
	if err != nil {
		return false, err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if p.pooled, err = store.BehindPooler(ctx, conn); err != nil {
		return false, err
	}
	p.decided = true
	return p.pooled, nil
}
