package store

// ReleaseSQL is the release statement, for tests that run it where Release
// would not (inside a transaction, to look at its settings). Its arguments:
// key, owner, token, lazy, logged, actor.
const ReleaseSQL = releaseSQL

// ApplyScript runs a schema script, for tests that migrate with an earlier
// version's schema (testdata).
var ApplyScript = applyScript

// Standalone is standalone, for TestStandalone.
var Standalone = standalone
