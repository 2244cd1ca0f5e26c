// Package lockmetrics is the shape of the wait and hold histograms: their
// names, labels, buckets and the bounded key prefix that labels them. It
// is a leaf (it imports only the Prometheus client), so every side that
// measures waits and holds can measure the same: `lockctl metrics` from
// the event log (internal/metrics), and a service's own locker.
//
// A series is labelled with the key's prefix, the part before a
// separator (":" unless configured): billing:nightly is "billing". Lock
// keys are unbounded (a service may lock one key per order), so the
// prefixes are capped: the first MaxPrefixes distinct ones seen get a
// series of their own, every later one is counted as Other. A million
// distinct keys then make at most MaxPrefixes + 1 label values.
package lockmetrics
