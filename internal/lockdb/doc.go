// Package lockdb holds what the SQL layer (store) and the library (locker)
// must share without store importing locker: the errors a database answer
// means. Locker exports each under its own name, so a service, the CLI and
// the console branch on locker's names, with errors.Is, whether an error came
// through locker or straight from store or internal/lockview: the values are
// the same.
package lockdb
