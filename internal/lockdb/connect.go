package lockdb

import (
	"context"

	"github.com/jackc/pgx/v5"
)

// ConnectWith returns a function that opens a new connection from cfg: the
// Connect of a locker.Notifier that LISTENs on the server a pool of cfg
// reaches, as lockctl's commands, console and tests start theirs.
func ConnectWith(cfg *pgx.ConnConfig) func(ctx context.Context) (*pgx.Conn, error) {
	return func(ctx context.Context) (*pgx.Conn, error) {
		return pgx.ConnectConfig(ctx, cfg.Copy())
	}
}
