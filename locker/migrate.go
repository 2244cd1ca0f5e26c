package locker

import (
	"context"
	"fmt"

	"github.com/lockctl/lockctl/store"
)

// Migrate creates or updates the lock tables, functions and indexes (the
// schema this package was built with, embedded in it) on db, in one
// transaction. It is idempotent and safe to run from several processes at
// once, so a service can call it at start-up; the role needs the right to
// create objects in its schema. `lockctl migrate` does the same, except on
// the reference service's four-column table: Migrate leaves that to the
// operator and fails with ErrCannotAdopt, so a service starting early never
// takes it over while the reference service may still write it.
func Migrate(ctx context.Context, db TxStarter) error {
	if err := store.Migrate(ctx, db); err != nil {
		return fmt.Errorf("locker: migrate: %w", err)
	}
	return nil
}
