package cli

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/lockctl/lockctl/internal/lockdb"
	"github.com/lockctl/lockctl/internal/lockview"
	"github.com/lockctl/lockctl/internal/operator"
	"github.com/lockctl/lockctl/internal/textsafe"
	"github.com/lockctl/lockctl/locker"
)

// forced is what expire or force-release did: the lease it ended (for every
// holder of a shared or semaphore key, the group's row, owner "*"), how
// many holders' leases it ended then (holders), or, when the lease was one
// holder's (holder), how many other holders still hold the key (others).
type forced struct {
	lease   locker.Lease
	holders int
	holder  bool
	others  int
}

// forceCounted runs act on key's token in a transaction of its own, so
// that it can say what the action ended before it commits
// (lockview.ReadForcedHolders): when it ended every holder of a group, how
// many; when it ended one holder's lease, how many others hold the key.
func forceCounted(ctx context.Context, op operator.Operator, pool *pgxpool.Pool, key string, token int64, act forceAction) (forced, error) {
	var done forced
	err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		lease, err := act(op, ctx, tx, key, token)
		if err != nil {
			return err
		}
		kind := lockdb.EventForceReleased
		if lease.Outcome == operator.Expired {
			kind = lockdb.EventForceExpired
		}
		f, err := lockview.ReadForcedHolders(ctx, tx, key, lease.Token, kind)
		done = forced{lease: lease, holder: f.Holder, others: f.Running}
		if lease.Owner == lockdb.GroupOwner {
			done.holder, done.holders = false, f.Ended
		}
		return err
	})
	return done, err
}

// printForced reports what expire or force-release did: printLeaseDelayed's
// line for a lease held alone; for one holder's lease, how many other
// holders keep theirs; for every holder's, how many it ended.
func printForced(env Env, asJSON bool, done forced, delayUntil *time.Time) int {
	l := done.lease
	if asJSON {
		r := leaseResult(l)
		r.Actor, r.DelayUntil, r.HoldersEnded = env.Actor, utcPtr(delayUntil), done.holders
		return env.emit(r)
	}
	verb := "force-released"
	if l.Outcome == operator.Expired {
		verb = "expired"
	}
	key, actor := textsafe.Escape(l.Key), textsafe.Escape(env.Actor)
	switch {
	case l.Owner == lockdb.GroupOwner:
		fmt.Fprintf(env.Stdout, "%s %s of %s (group token %d, by %s)\n",
			verb, plural(done.holders, "holder", "holders"), key, l.Token, actor)
	case done.holder && done.others > 0:
		fmt.Fprintf(env.Stdout, "%s %s token=%d owner=%s (by %s; one of its holders: %s keep theirs)\n",
			verb, key, l.Token, textsafe.Escape(l.Owner), actor, plural(done.others, "other", "others"))
	case done.holder:
		fmt.Fprintf(env.Stdout, "%s %s token=%d owner=%s (by %s; the key's last holder)\n",
			verb, key, l.Token, textsafe.Escape(l.Owner), actor)
	default:
		return printLeaseDelayed(env, false, l, env.Actor, delayUntil)
	}
	return ExitOK
}
