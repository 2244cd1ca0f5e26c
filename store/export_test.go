package store

import "context"

// ReleaseSQL is the release statement, for tests that run it where Release
// would not (inside a transaction, to look at its settings). Its arguments:
// key, owner, token, lazy, logged, actor.
const ReleaseSQL = releaseSQL

// MigrateThrough migrates db with the package's migrations followed by
// extra (versions after LatestVersion), as a later lockctl would.
func MigrateThrough(ctx context.Context, db TxStarter, extra ...Migration) error {
	_, err := migrateWith(ctx, db, MigrateOptions{}, append(Migrations(), extra...))
	return Interpret(err)
}

// StatusWith is Status against the package's migrations followed by extra.
func StatusWith(ctx context.Context, db DBTX, extra ...Migration) (MigrationStatus, error) {
	return status(ctx, db, append(Migrations(), extra...))
}

// Standalone is standalone, for TestStandalone.
var Standalone = standalone
