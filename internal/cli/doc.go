// Package cli holds lockctl's commands on cobra, one file each with its
// *cobra.Command and its body (the console, ls, events, acquire, run,
// renew, release, expire, force-release, metrics, migrate, grant, prune,
// completion), and what they share: the command tree (NewRoot) with its
// global flags, argument checks read from each command's Use line, help,
// suggestions for mistyped commands and flags, completion that reads the
// database, exit codes (Execute maps errors to them in one place; 128+signal
// for an interrupted wait), output as text or JSON, and connecting to the
// database with failures told in plain words (ConnectError).
//
// main.go wires the tree and calls Execute; every command body takes an
// Env, writes only to its Stdout and Stderr, and returns the process exit
// code, so it can be tested without exiting.
//
// Lock writes go through package locker, reads through internal/lockview,
// migration and the table and pooler probes through package store. The one
// exception is grant: its statements come from internal/roles, and it runs
// them here, with current_schema() to name the schema, in a single
// transaction, because they change roles rather than locks. Everything
// printed for a terminal that came from the database passes through
// textsafe.Escape, and no message ever shows a password from the connection
// string (see RedactDSN).
package cli
