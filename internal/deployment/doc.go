// Package deployment tests package locker the ways services deploy it: in
// every pgx query exec mode a DSN can choose, behind PgBouncer (lock
// operations, contended cycles and the history check through a
// transaction pooler; whether a Notifier's LISTEN connection hears
// releases), and across a standby's promotion (tokens, acknowledged
// releases, clients following a multi-host DSN).
//
// They start their own PgBouncers and replicas, so they live here rather
// than beside locker's unit tests, which stay quick to run while working on
// the library. The package has no code of its own.
package deployment
