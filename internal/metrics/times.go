package metrics

import (
	"context"
	"time"

	"github.com/lockctl/lockctl/internal/lockmetrics"
	"github.com/lockctl/lockctl/internal/lockview"
	"github.com/lockctl/lockctl/store"
)

// What the histograms' help says they hold: what the event log records.
const (
	waitHelp = "How long acquires waited, by key prefix: until granted (outcome granted; a grant at the first try counts 0) " +
		"or until they gave up (outcome gave_up). From the event log: grants and give-ups are logged by lockers with " +
		"LogGrants (the CLI, the console); steals always."
	holdHelp = "How long leases were held, by key prefix: from their grant to their release, force-expire or " +
		"force-release. From the event log: only leases whose grant and end were both logged (lockers with LogGrants; " +
		"force actions always); an expiry is not measured."
)

const (
	// measureBatch is how many events one read of the log returns.
	measureBatch = 10000
	// maxMeasuredPerScrape bounds the events one scrape observes, so a
	// scrape after a burst ends within its timeout; the next one reads on
	// where it stopped.
	maxMeasuredPerScrape = 200000
)

// waitsAndHolds are the wait and hold histograms, observed from the event
// log incrementally: each scrape reads the events logged since the last
// one read (by event_id), never the window again. The first scrape starts
// at the end of the log, so the histograms count what happens while the
// process runs, as a process's own histograms would.
type waitsAndHolds struct {
	hist     lockmetrics.Histograms
	prefixes *lockmetrics.Prefixes
	started  bool
	through  int64 // the last event read
}

func newWaitsAndHolds(cfg Config) waitsAndHolds {
	return waitsAndHolds{
		hist:     lockmetrics.NewHistograms("lockctl", waitHelp, holdHelp),
		prefixes: lockmetrics.NewPrefixes(cfg.PrefixSeparator, cfg.MaxPrefixes),
	}
}

// observe reads the events logged since the last read, settled for
// settle, and observes their waits and holds. What it read before an
// error stays observed, and the next scrape reads on from there.
func (w *waitsAndHolds) observe(ctx context.Context, db store.DBTX, settle time.Duration) error {
	if !w.started {
		last, err := lockview.LastEventID(ctx, db)
		if err != nil {
			return err
		}
		w.through, w.started = last, true
		return nil
	}
	for read := 0; read < maxMeasuredPerScrape; {
		ms, through, more, err := lockview.ReadMeasures(ctx, db, w.through, settle, measureBatch)
		if err != nil {
			return err
		}
		for _, m := range ms {
			w.add(m)
		}
		w.through, read = through, read+len(ms)
		if !more {
			return nil
		}
	}
	return nil
}

// add observes one event's wait or hold.
func (w *waitsAndHolds) add(m lockview.Measure) {
	switch {
	case m.Waited && m.GaveUp():
		w.hist.Wait.WithLabelValues(w.prefixes.Of(m.Key), lockmetrics.OutcomeGaveUp).Observe(m.Wait.Seconds())
	case m.Waited:
		w.hist.Wait.WithLabelValues(w.prefixes.Of(m.Key), lockmetrics.OutcomeGranted).Observe(m.Wait.Seconds())
	case m.Held:
		w.hist.Hold.WithLabelValues(w.prefixes.Of(m.Key)).Observe(m.Hold.Seconds())
	}
}
