// Package bench measures what a lock costs: lockctl's locker against a
// faithful port of the transaction-per-acquire reference design it replaces,
// and against what the server can do at all (one commit per round trip, one
// empty round trip). It backs `lockctl bench`; BENCHMARKS.md records a run.
//
// Why interleaved: the machine this runs on is shared and its speed drifts
// (other processes, checkpoints, autovacuum). Running every series for a few
// seconds in turn, round after round, and reporting medians per series puts
// each series under the same drift, so the ratios between them hold even
// when absolute numbers wobble.
//
// Why correctness counters: a lock that is fast because it is wrong is not
// fast. Every grant is checked against an in-memory holder map (a second
// holder of a key is a mutual-exclusion violation) and against the last token
// granted on its key (a token that does not increase is a fencing violation).
// The locker must show zero; the reference shows what it shows.
//
// The reference port (reference.go) and the peers' keep-row upsert
// (upsert.go) are benchmark code, not API: they exist to be measured
// against, each on a table of its own in the benchmark's schema.
package bench
