package demo

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/lockctl/lockctl/store"
)

// ErrPooled is returned when --dsn goes through a connection pooler.
var ErrPooled = errors.New("the demo needs a direct connection to PostgreSQL, not one through a connection pooler: " +
	"it keeps one demo per schema with a session advisory lock and confines itself to its schema with search_path, " +
	"and a transaction pooler keeps neither; give --dsn the server's own address")

// refusePooler returns ErrPooled when pool reaches server through a pooler.
func refusePooler(ctx context.Context, pool *pgxpool.Pool, server string) error {
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return fmt.Errorf("demo: %w", store.Interpret(err))
	}
	defer conn.Release()
	pooled, err := store.BehindPooler(ctx, conn.Conn())
	if err != nil {
		return fmt.Errorf("demo: %w", err)
	}
	if pooled {
		return fmt.Errorf("%s: %w", server, ErrPooled)
	}
	return nil
}
