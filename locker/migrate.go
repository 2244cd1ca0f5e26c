package locker

import (
	"context"
	"fmt"

	"github.com/lockctl/lockctl/store"
)

// Migrate brings db to the schema this package was built with (embedded in
// it). It is idempotent and safe to run from several processes at once, so
// a service can call it at start-up; the role needs the right to create
// objects in its schema. A schema it does not recognise (ErrSchemaNewer: a
// newer lockctl migrated it), a lock schema other roles may create objects
// in, or the reference service's table is left as it is, with an error
// that says what to do; it waits a minute at most for another migrate.
func Migrate(ctx context.Context, db TxStarter) error {
	if err := store.Migrate(ctx, db); err != nil {
		return fmt.Errorf("locker: migrate: %w", err)
	}
	return nil
}
