package locker

import (
	"context"
	"encoding/json"
	"fmt"
	"github.com/lockctl/lockctl/internal/lockdb"
	"github.com/lockctl/lockctl/store"
)

// Fence proves, inside the caller's transaction tx, that each of leases is
// still the current, unexpired grant, and keeps it so until tx ends: it
// locks the lock rows FOR SHARE, so no take-over commits first, and writes
// made in tx after it returns nil commit only while the leases hold. On a
// lost lease it returns an *Error matching ErrNotHeld: roll back.
func Fence(ctx context.Context, tx DBTX, leases ...Lease) error {
	if err := validLeases(leases); err != nil {
		return fmt.Errorf("locker: fence: %w", err)
	}
	for _, lease := range leases {
		ok, err := store.Fence(ctx, tx, lease.ref())
		if err != nil {
			return fmt.Errorf("locker: fence %q: %w", lease.Key, err)
		}
		if !ok {
			return notHeld(ctx, tx, lease.Key, lease.Owner, lease.Token)
		}
	}
	return nil
}

// ReportStaleWrite records on the key that a write made with lease's
// token was refused. Run it outside the refused transaction.
func (l *Locker) ReportStaleWrite(ctx context.Context, db DBTX, lease Lease, resource string) error {
	detail := map[string]any{}
	if resource != "" {
		detail["resource"] = resource
	}
	b, err := json.Marshal(detail)
	if err == nil {
		err = lockdb.ValidJSON("detail", b)
	}
	if err != nil {
		return fmt.Errorf("locker: report stale write on %q: %w", lease.Key, err)
	}
	if err := store.RecordStaleWrite(ctx, db, lease.ref(), l.ownerActor(lease.Owner), detail); err != nil {
		return fmt.Errorf("locker: report stale write on %q: %w", lease.Key, err)
	}
	return nil
}
