package locker

import (
	"context"
	"encoding/json"
	"fmt"
	"github.com/lockctl/lockctl/internal/lockdb"
	"github.com/lockctl/lockctl/store"
)

// Fence proves, inside the caller's transaction tx, that lease is still the
// current, unexpired grant, and keeps it so until tx ends: it locks the lock
// row FOR SHARE, and any other owner's take-over must lock that row for
// update, so it waits until tx commits or rolls back. Writes made in tx after
// Fence returns nil therefore commit only while the lease holds.
//
// Call it in a transaction (with a pool or a bare connection the row lock
// ends with the statement and proves nothing about later statements). On a
// lost lease it returns a *NotHeldError; roll back. The holder's own Renew
// also waits for tx, so keep fenced transactions short.
func Fence(ctx context.Context, tx DBTX, lease Lease) error {
	if err := validLease(lease); err != nil {
		return fmt.Errorf("locker: fence: %w", err)
	}
	ok, err := store.Fence(ctx, tx, lease.ref())
	if err != nil {
		return fmt.Errorf("locker: fence %q: %w", lease.Key, err)
	}
	if !ok {
		return notHeld(ctx, tx, lease.Key, lease.Owner, lease.Token)
	}
	return nil
}

// ReportStaleWrite records, as an event on the key, that a write made with
// lease's token was refused (by Fence or by a resource that checks tokens).
// Run it outside the refused transaction, which rolls back.
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
