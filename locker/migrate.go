package locker

import (
	"context"
	"fmt"

	"github.com/lockctl/lockctl/store"
)

// Migrate brings db to the schema this package was built with (embedded in
// it): it applies the numbered migrations db has not recorded, each once in
// its own transaction, then re-creates the functions. It is idempotent and
// safe to run from several processes at once, so a service can call it at
// start-up; the role needs the right to create objects in its schema. A
// schema migrated by a newer lockctl is refused with ErrSchemaNewer and left
// as it is, and so is a lock schema in which roles other than the owner of
// the lock tables may create objects, or own functions or operators
// (ErrSchemaOpen: what they make could run inside the protocol as the
// owner). It waits for another migrate, and for locks on the lock tables, a
// minute at most (ErrLockTimeout). `lockctl migrate` does the same, except on
// the reference service's four-column table: Migrate leaves that to the
// operator and fails with ErrCannotAdopt, so a service starting early never
// takes it over while the reference service may still write it.
func Migrate(ctx context.Context, db TxStarter) error {
	if err := store.Migrate(ctx, db); err != nil {
		return fmt.Errorf("locker: migrate: %w", err)
	}
	return nil
}
