// Package demo is `lockctl demo`: simulated workers that take, keep, lose and
// fight over locks through package locker — the same code services embed —
// on a private throwaway PostgreSQL (or a schema of an existing database),
// while the console watches.
//
// The cast, each a goroutine with its own owner id and its own random
// stream derived from Config.Seed (so a seed replays the same choices):
//
//   - Leaders ("scheduler:leader", "mailer:leader") hold a lease for a long
//     while with a Keepalive, then step down; a standby waiting with
//     locker.Acquire takes over at once (NOTIFY on release).
//   - Contenders ("worker-01" …) queue with locker.Acquire on a few hot keys
//     ("orders:shard-N"), work while a Keepalive renews, and release: the
//     next waiter gets the key. Now and then one crashes: it stops renewing
//     without releasing, its lease expires and a waiter steals it with a
//     larger token; the worker comes back with a new owner id, as a
//     restarted process would.
//   - Two ledger writers share "ledger:balance" and a fenced resource, the
//     demo_resource table. Every write runs in a transaction that first
//     proves the lease with locker.Fence and then updates the row only if
//     its last token is not larger (`WHERE last_token <= $token`). Sometimes
//     a holder freezes past its TTL (a long GC pause); the other writer
//     steals the key and writes; the frozen one wakes, writes with its old
//     token, is refused, and reports it (Locker.ReportStaleWrite), which the
//     console's events pane shows.
//   - A report generator takes "reports:stuck" with a one-hour TTL and hangs;
//     a retry job waits behind it. Only an operator frees it (force-expire,
//     `x` in the console); the waiter takes it at once.
//   - A transfer ("transfer-1") moves money between two accounts of the
//     demo_account table: it takes both keys ("accounts:alice",
//     "accounts:bob", "accounts:carol") in one all-or-nothing
//     one locker.Acquire of both, waiting until it can have both, renews them with
//     one Keepalive, moves the money in a transaction that fences both
//     leases, and releases both with one Release. Two tellers post to one
//     account at a time under its key alone, and contend with it.
//   - A nightly backup ("backup-1") holds "backup:nightly" with a
//     lock-delay (Request.LockDelay) and crashes every time; "backup-2"
//     queues behind it. The crashed lease runs out, then the key is
//     delayed — nobody is granted it, as the crashed holder may only be
//     slow and still writing somewhere no token is checked — and the
//     waiter, keeping its place, gets it when the delay ends, backs up and
//     releases cleanly (which starts no delay).
//   - Two inventory syncers ("sync-eu", "sync-us") each take their own
//     region's key ("inventory:eu", "inventory:us") and then, one after
//     the other, wait for the other's: a deadlock. The wait that closes
//     the cycle fails at once with locker.ErrDeadlock naming it; that
//     syncer counts it (the header's deadlocks), gives up its key, and the
//     other, handed the key, reconciles under both and releases them.
//   - Five report workers ("report-1" …) share "reports:pool", a semaphore
//     of three permits (locker.Acquire of a permit): at most three render at
//     once, each with a lease (and token) of its own, while the others
//     queue (a waiting locker.Acquire of a permit): a released permit goes to the next.
//   - Three pricing readers ("pricing-api-1" …) hold "config:pricing"
//     shared, side by side (locker.Acquire of a shared lease, waiting while
//     refused). Every so often the writer ("pricing-admin") queues for it
//     exclusively with locker.Acquire: readers that come after it queue
//     behind it, so they cannot starve it; the last reader's release hands
//     it the key, it makes a fenced write of the price list (demo_resource)
//     and releases, and the readers queued behind it are handed the key
//     together.
//
// Start runs the cast on a pool (headless: tests use it); Run adds the
// server, the schema and the console, and tears all of it down on exit.
package demo
