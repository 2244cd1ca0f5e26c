package lockmetrics

import "github.com/prometheus/client_golang/prometheus"

// Labels and their values.
const (
	// LabelPrefix is the key's prefix (Prefixes.Of).
	LabelPrefix = "prefix"
	// LabelOutcome says how a wait ended: OutcomeGranted or OutcomeGaveUp.
	LabelOutcome   = "outcome"
	OutcomeGranted = "granted"
	OutcomeGaveUp  = "gave_up"
)

// Buckets are the histograms' upper bounds, in seconds, for both waits and
// holds: Prometheus's defaults (5ms to 10s) with a millisecond below, for
// grants at the first try, which take a database round trip, and minutes
// to an hour above, for queues behind long jobs and the jobs themselves.
var Buckets = []float64{0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900, 3600}

// Histograms are the wait and hold histograms under one namespace
// ("lockctl": lockctl_wait_seconds, lockctl_hold_seconds), their help
// saying what the side that measures them sees.
type Histograms struct {
	// Wait is by LabelPrefix and LabelOutcome: how long an acquire waited
	// until it was granted or gave up.
	Wait *prometheus.HistogramVec
	// Hold is by LabelPrefix: how long a lease was held until it ended.
	Hold *prometheus.HistogramVec
}

// NewHistograms makes the two histograms.
func NewHistograms(namespace, waitHelp, holdHelp string) Histograms {
	return Histograms{
		Wait: prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: namespace, Name: "wait_seconds",
			Help: waitHelp, Buckets: Buckets}, []string{LabelPrefix, LabelOutcome}),
		Hold: prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: namespace, Name: "hold_seconds",
			Help: holdHelp, Buckets: Buckets}, []string{LabelPrefix}),
	}
}

// Describe and Collect make Histograms a prometheus.Collector.
func (h Histograms) Describe(ch chan<- *prometheus.Desc) {
	h.Wait.Describe(ch)
	h.Hold.Describe(ch)
}

func (h Histograms) Collect(ch chan<- prometheus.Metric) {
	h.Wait.Collect(ch)
	h.Hold.Collect(ch)
}
