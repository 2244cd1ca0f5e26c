package store

// ReleaseSQL are the release statements, for tests that run one where
// Release would not (inside a transaction, to look at its settings).
var ReleaseSQL = map[string]string{"plain": releaseSQL, "logged": releaseLoggedSQL}

// ApplyScript runs a schema script, for tests that migrate with an earlier
// version's schema (testdata).
var ApplyScript = applyScript

// Standalone is standalone, for TestStandalone.
var Standalone = standalone
