package cli

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/spf13/cobra"

	"github.com/lockctl/lockctl/locker"
)

// DowngradeCommand is `lockctl downgrade KEY`.
func DowngradeCommand() *cobra.Command {
	var o LeaseOptions
	cmd := &cobra.Command{
		Use:   "downgrade KEY",
		Short: "make the exclusive lease --owner holds with --token a shared one, new token (exit 4: not held)",
		RunE: RunE(func(ctx context.Context, env Env, args []string) int {
			o.Key = args[0]
			return Downgrade(ctx, env, o)
		}),
	}
	convertFlags(cmd, &o)
	return cmd
}

// UpgradeCommand is `lockctl upgrade KEY`.
func UpgradeCommand() *cobra.Command {
	var o LeaseOptions
	cmd := &cobra.Command{
		Use:   "upgrade KEY",
		Short: "make the shared lease --owner holds with --token the exclusive one, new token (exit 3: held, 4: not held, 5: deadlock)",
		RunE: RunE(func(ctx context.Context, env Env, args []string) int {
			o.Key = args[0]
			return Upgrade(ctx, env, o)
		}),
	}
	convertFlags(cmd, &o)
	DurationVar(cmd.Flags(), &o.Wait, "wait", 0, "wait up to this long for the other holders to end (0: try once)")
	return cmd
}

// convertFlags are the flags downgrade and upgrade share with renew.
func convertFlags(cmd *cobra.Command, o *LeaseOptions) {
	fs := cmd.Flags()
	OwnerVar(fs, &o.Owner, "owner", "owner `id` of the lease")
	TokenVar(fs, &o.Token, "token", "fencing token of the lease")
	TTLVar(fs, &o.TTL, "ttl", 30*time.Second, "the new lease's length, from its grant")
	fs.BoolVar(&o.JSON, "json", false, "print the result as JSON")
	Required(fs, "owner", "token")
	completeLease(cmd)
}

// Downgrade turns the exclusive lease named by key, owner and token into a
// shared one of opts.TTL, with a new token; readers queued at the head of
// the key's queue join it. Exit 4 when that lease is not the current
// exclusive one.
func Downgrade(ctx context.Context, env Env, opts LeaseOptions) int {
	return runLease(ctx, env, opts, func(lk *locker.Locker, pool *pgxpool.Pool, lease locker.Lease) (locker.Lease, error) {
		return lk.Downgrade(ctx, pool, lease)
	})
}

// Upgrade turns the shared lease (or permit) named by key, owner and token
// into the key's exclusive lease of opts.TTL, with a new token: at once
// when no other lease of the key runs, else waiting up to opts.Wait in the
// key's queue. Exit 3 when it did not get it, 4 when that lease is not
// current, 5 when its wait would deadlock (another holder upgrades).
func Upgrade(ctx context.Context, env Env, opts LeaseOptions) int {
	return runLease(ctx, env, opts, func(lk *locker.Locker, pool *pgxpool.Pool, lease locker.Lease) (locker.Lease, error) {
		return lk.Upgrade(ctx, pool, lease, opts.Wait)
	})
}
