package cli

import (
	"context"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/lockctl/lockctl/locker"
)

// keepLeases keeps run's leases while its command runs, by one session:
// one heartbeat per interval however many keys, whatever their kind
// (held alone, shared or a permit), and if lockctl dies they all lapse
// together. closeKeeper closes the session; call it after keep.Stop.
func keepLeases(ctx context.Context, lk *locker.Locker, pool *pgxpool.Pool, leases []locker.Lease) (keep *locker.Keepalive, closeKeeper func(), err error) {
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
