package testdb

import (
	"context"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/lockctl/lockctl/store"
)

// Statements is a store.DBTX that counts the statements sent through it:
// each Exec, Query or QueryRow is one round trip. Tests use it to show what
// an operation costs.
type Statements struct {
	store.DBTX
	N int
}

func (s *Statements) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	s.N++
	return s.DBTX.Exec(ctx, sql, args...)
}

func (s *Statements) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	s.N++
	return s.DBTX.Query(ctx, sql, args...)
}

func (s *Statements) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	s.N++
	return s.DBTX.QueryRow(ctx, sql, args...)
}
