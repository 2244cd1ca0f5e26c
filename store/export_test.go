package store

import "context"

// ReleaseSQL is the release statement, for tests that run it where Release
// would not (inside a transaction, to look at its settings). Its arguments:
// key, owner, token, lazy, logged, actor.
const ReleaseSQL = releaseSQL

// ApplyScript runs a schema script as a migration does (one transaction,
// serialised with other migrations), for tests that migrate with an earlier
// version's schema (testdata).
func ApplyScript(ctx context.Context, db TxStarter, script string) error {
	return applyScriptWith(ctx, db, script, nil, nil)
}

// Standalone is standalone, for TestStandalone.
var Standalone = standalone
