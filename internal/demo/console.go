package demo

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/lockctl/lockctl/internal/operator"
	"github.com/lockctl/lockctl/locker"
	"github.com/lockctl/lockctl/tui"
)

// consoleOptions is what the demo hands the console.
type consoleOptions struct {
	pool     *pgxpool.Pool
	locker   *locker.Locker
	operator operator.Operator
	server   string
	refresh  time.Duration
	readOnly bool
	theme    string
	status   func() string
}

// consoleOwner is the owner the console's acquire form proposes, so a lock
// taken by hand stands out among the cast's.
const consoleOwner = "operator"

// console opens the real console (package tui) on the demo's database; the
// operator's actions go through the same locker as everywhere else.
func console(ctx context.Context, o consoleOptions) error {
	return tui.Run(ctx, tui.Options{
		Pool: o.pool, Locker: o.locker, Operator: o.operator, Server: o.server,
		Refresh: o.refresh, ReadOnly: o.readOnly, Theme: tui.Theme(o.theme), Export: true,
		Owner: consoleOwner, TTL: 30 * time.Second, Status: o.status,
	})
}
