// Package cli holds the bodies of lockctl's scriptable commands (ls,
// events, acquire, run, renew, release, expire, metrics, migrate, prune) and
// the machinery they share: the command table's types, argument parsing,
// help, suggestions for mistyped commands and flags, shell completion
// (generated from the command table), exit codes (128+signal for an
// interrupted wait), output as text or JSON, and connecting to the database
// with failures told in plain words (ConnectError).
//
// main.go owns the command table (which commands exist and their flags) and
// calls Dispatch; every command body here takes an Env, writes only to its
// Stdout and Stderr, and returns the process exit code, so it can be tested
// without exiting.
//
// Writes go through package locker and reads through internal/lockview: this
// package runs no SQL of its own. Everything printed for a terminal that came
// from the database passes through textsafe.Escape, and no message ever
// shows a password from the connection string (see RedactDSN).
package cli
