// Package lockdb holds the Go side of the protocol's vocabulary, which the
// SQL layer (store), the library (locker) and lockctl's commands and
// console share without store importing locker: the interface statements
// run on (DBTX), a lock row (LockInfo) and what it means (State), the
// outcomes the protocol functions report and the kinds of the events they
// write, and the errors a database answer means.
//
// Each is defined here once. Locker exports the ones a service sees under
// its own names (locker.DBTX, locker.Acquired, locker.ErrNotMigrated, …),
// so a service, the CLI and the console branch on locker's names whether a
// value came through locker or straight from store or internal/lockview:
// the values are the same.
package lockdb
