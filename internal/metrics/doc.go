// Package metrics is the Prometheus collector behind `lockctl metrics`: on
// every scrape it reads the lock table, the waiters and the event log
// (through internal/lockview) within a timeout, and reports what operators
// alert on. The metric names, their labels and the bound on their
// cardinality are listed in docs/metrics.md.
//
// Counters come from the event log, which `lockctl prune --events-older`
// trims: the collector counts each span of the log once, in memory, and
// adds it to running totals, so the counters only go up while the process
// lives, whatever is pruned. A restart starts them again from the events
// still in the log, which Prometheus's rate() and increase() treat as a
// counter reset.
//
// The wait and hold histograms (times.go; their shape is
// internal/lockmetrics's) are observed from the same log, incrementally:
// each scrape reads the events logged since the last one it read, by
// event_id, from the end of the log at the first scrape on.
package metrics
