package cli

import (
	"context"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/lockctl/lockctl/locker"
)

// keepLeases keeps run's leases while its command runs. Leases held alone
// are kept by one session: one heartbeat per interval however many keys,
// and if lockctl dies they all lapse together. A shared or permit lease
// (holder) is kept by a Keepalive of its own, renewing it every third of
// its TTL: a session cannot bind a holder's lease yet. closeKeeper closes
// what keepLeases opened (the session); call it after keep.Stop.
func keepLeases(ctx context.Context, lk *locker.Locker, pool *pgxpool.Pool, leases []locker.Lease, holder bool) (keep *locker.Keepalive, closeKeeper func(), err error) {
	if holder {
		return lk.Keepalive(ctx, pool, leases[0]), func() {}, nil
	}
	session, err := lk.OpenSession(ctx, pool, leases[0].Owner)
	if err != nil {
		return nil, nil, err
	}
	closeSession := func() {
		cctx, cancel := context.WithTimeout(ctx, releaseTimeout)
		defer cancel()
		_ = session.Close(cctx) // a session it cannot close lapses at its TTL, bound to nothing
	}
	return session.Keepalive(ctx, leases...), closeSession, nil
}
