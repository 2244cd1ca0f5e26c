package cli

import (
	"context"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/lockctl/lockctl/internal/operator"
)

// operatorOn is what every operator command starts from: the operator
// acting as env.Actor (checked before anything connects) and a pool on
// env.DSN, which the caller closes.
func operatorOn(ctx context.Context, env Env) (operator.Operator, *pgxpool.Pool, error) {
	op, err := operator.New(env.Actor)
	if err != nil {
		return operator.Operator{}, nil, err
	}
	pool, err := Connect(ctx, env.DSN)
	if err != nil {
		return operator.Operator{}, nil, err
	}
	return op, pool, nil
}
