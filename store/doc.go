// Package store holds the lock statements lockctl runs against the
// distributed_lock table and its companions (distributed_lock_event,
// distributed_lock_waiter): grant, renew, release, fence, the operator's
// force actions, prune, waiter bookkeeping, reading one key's row, the
// schema and its migration, and the mapping of database errors.
//
// Each function takes a DBTX, so the same call runs on a *pgxpool.Pool, a
// *pgx.Conn or the caller's pgx.Tx. Store knows SQL, not lock semantics: it
// reports what a statement did (for example "no row matched") and the locker
// package turns that into outcomes and errors. Every time is read from the
// protocol's one clock in the database (distributed_lock_now()), never from
// this process.
//
// Services use package locker, never store. What the console and `lockctl
// ls` read about many locks (windows, totals, rates, events) is
// internal/lockview.
//
// Every write goes through the protocol functions of schema.sql
// (distributed_lock_acquire, _renew, _release, _fence, _force_expire,
// _force_release, _prune, the waiter bookkeeping): they run as the role that
// migrated, so the roles lockctl grants need EXECUTE on them and no write
// privilege on any table. Store calls them and reads their result rows.
//
// Statements are named constants beside the function that runs them.
// Arguments are always bound as parameters.
package store
