package hotkeys

import (
	"context"
	"math"
	"sync"
	"time"

	"github.com/lockctl/lockctl/internal/lockview"
	"github.com/lockctl/lockctl/store"
)

const (
	// Kept is how far back a Tracker keeps events: the longest window.
	Kept = time.Hour
	// sliceLen is the time one slice of the ring holds: every window's
	// Points buckets are whole slices.
	sliceLen = 3 * time.Second
	ringLen  = int(Kept / sliceLen)
	// readBatch is how many events one read of the log returns: large
	// enough that a short lease's grant is usually among the events read
	// with its end (lockview.ReadMeasures), small enough that the
	// server's estimate stays below JIT's optimization threshold (whose
	// compilation would cost more than the read).
	readBatch = 10000
	// Settle is how long after an event occurred a Tracker reads it, so
	// its transaction has committed (an event of a smaller id committing
	// later would be skipped); the pages lag the log by that much.
	Settle = 2 * time.Second
)

// Windows are the spans the console offers, shortest first.
var Windows = []time.Duration{time.Minute, 15 * time.Minute, time.Hour}

// kind is what an event counts as.
type kind uint8

const (
	granted         kind = iota // at the first try: a wait of 0
	handedOff                   // granted after a wait in the queue (a hand-off)
	stolen                      // an expired lease taken over at the first try
	stolenAfterWait             // taken over by a hand-off after a wait
	gaveUp                      // a wait that ended without a grant
	ended                       // a lease released: its hold
	forced                      // a lease force-expired or force-released: its hold
)

// noHold marks an ended lease whose hold was not measured.
const noHold = math.MaxUint32

// event is one measure, in twelve bytes: the interned key, what it
// counts as, and its wait or hold in milliseconds.
type event struct {
	key  uint32
	kind kind
	ms   uint32
}

// slot is one slice of the ring: its number (time since the epoch in
// sliceLen units) and its events.
type slot struct {
	no     int64
	events []event
}

// Tracker keeps the last hour of the event log's measures in memory and
// reads on from where it stopped. Safe for concurrent use: the consoles a
// SharedSource serves share one.
type Tracker struct {
	mu sync.Mutex
	hour
}

// hour is what a Tracker read, forgotten all at once when it starts over.
type hour struct {
	started bool
	// startID is where the first load began; targetID the log's end then:
	// until through reaches it, the Tracker is catching up.
	startID, targetID int64
	through           int64
	readTo            time.Time // when the newest event read occurred
	lastRefresh       time.Time // this process's clock
	ring              [ringLen]slot

	keys []string          // interned keys, by id
	ids  map[string]uint32 // and their ids
	// counts, touched and rowOf (a ranked key's row + 1) are Rank's
	// buffers, by key id, zero between calls.
	counts  []Counts
	touched []bool
	rowOf   []int32
	// compacted is when the interned keys were last rebuilt from the ring.
	compacted time.Time
}

// NewTracker returns an empty Tracker: its first Refresh loads the hour.
func NewTracker() *Tracker { return &Tracker{} }

// Progress says how complete a Tracker's hour is.
type Progress struct {
	// CaughtUp: every event up to the log's end, less Settle, was read.
	CaughtUp bool
	// Read and Of count the events of the first load read so far and in
	// all (by id); ReadTo is when the newest read occurred.
	Read, Of int64
	ReadTo   time.Time
}

// Refresh reads the events logged since the last refresh, for at most
// budget (at least one batch), on db. The first refresh, or one after an
// hour without any, starts at the first event of the last hour.
func (t *Tracker) Refresh(ctx context.Context, db store.DBTX, budget time.Duration) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	start := time.Now()
	if !t.started || start.Sub(t.lastRefresh) > Kept {
		if err := t.restart(ctx, db); err != nil {
			return err
		}
	}
	for {
		ms, through, more, err := lockview.ReadMeasures(ctx, db, t.through, Settle, readBatch)
		if err != nil {
			return err
		}
		for _, m := range ms {
			t.add(m)
		}
		t.through = through
		if !more || time.Since(start) >= budget {
			break
		}
	}
	t.lastRefresh = time.Now()
	if t.lastRefresh.Sub(t.compacted) >= time.Minute {
		t.compact()
	}
	return nil
}

// restart forgets what was read and starts at the last hour's first event.
func (t *Tracker) restart(ctx context.Context, db store.DBTX) error {
	from, err := lockview.FirstEventSince(ctx, db, Kept)
	if err != nil {
		return err
	}
	to, err := lockview.LastEventID(ctx, db)
	if err != nil {
		return err
	}
	t.hour = hour{started: true, startID: from, targetID: to, through: from, ids: map[string]uint32{},
		compacted: time.Now()}
	return nil
}

// progress is the Tracker's Progress; t.mu is held.
func (t *Tracker) progress() Progress {
	p := Progress{CaughtUp: t.through >= t.targetID, Read: t.through - t.startID, Of: t.targetID - t.startID, ReadTo: t.readTo}
	p.Read = min(p.Read, p.Of)
	return p
}

// add puts one measure in its slice; t.mu is held.
func (t *Tracker) add(m lockview.Measure) {
	if m.At.After(t.readTo) {
		t.readTo = m.At
	}
	e := event{kind: kindOf(m)}
	switch e.kind {
	case ended, forced:
		e.ms = noHold
		if m.Held {
			e.ms = millis(m.Hold)
		}
	default:
		e.ms = millis(m.Wait)
	}
	no := sliceOf(m.At)
	s := &t.ring[ringIndex(no)]
	switch {
	case no > s.no:
		s.no, s.events = no, s.events[:0]
	case no < s.no:
		return // older than the ring keeps
	}
	e.key = t.intern(m.Key)
	s.events = append(s.events, e)
}

func kindOf(m lockview.Measure) kind {
	switch {
	case m.GaveUp():
		return gaveUp
	case m.Force():
		return forced
	case !m.Waited:
		return ended
	case m.Steal() && m.Handoff:
		return stolenAfterWait
	case m.Steal():
		return stolen
	case m.Handoff:
		return handedOff
	}
	return granted
}

// millis is d in whole milliseconds, within what an event holds.
func millis(d time.Duration) uint32 {
	return uint32(min(max(d.Milliseconds(), 0), noHold-1))
}

func sliceOf(at time.Time) int64 { return at.UnixNano() / int64(sliceLen) }

func ringIndex(no int64) int { return int(no % int64(ringLen)) }

// intern is key's id; t.mu is held.
func (t *Tracker) intern(key string) uint32 {
	if id, ok := t.ids[key]; ok {
		return id
	}
	id := uint32(len(t.keys))
	t.keys = append(t.keys, key)
	t.ids[key] = id
	return id
}

// compact drops the interned keys no event in the ring names any more,
// once they are most of them: a key waited for once an hour ago is not
// kept for ever; t.mu is held.
func (t *Tracker) compact() {
	t.compacted = time.Now()
	newest := t.newestSlice()
	live := make([]bool, len(t.keys))
	n := 0
	for i := range t.ring {
		s := &t.ring[i]
		if s.no <= newest-int64(ringLen) {
			s.events = nil // out of the hour: let go of its memory too
			continue
		}
		for _, e := range s.events {
			if !live[e.key] {
				live[e.key] = true
				n++
			}
		}
	}
	if len(t.keys) < 1024 || n*2 > len(t.keys) {
		return
	}
	remap := make([]uint32, len(t.keys))
	keys, ids := make([]string, 0, n), make(map[string]uint32, n)
	for old, k := range t.keys {
		if live[old] {
			remap[old] = uint32(len(keys))
			ids[k] = uint32(len(keys))
			keys = append(keys, k)
		}
	}
	for i := range t.ring {
		for j := range t.ring[i].events {
			t.ring[i].events[j].key = remap[t.ring[i].events[j].key]
		}
	}
	t.keys, t.ids = keys, ids
}

// newestSlice is the newest slice holding events; t.mu is held.
func (t *Tracker) newestSlice() int64 {
	var newest int64
	for i := range t.ring {
		newest = max(newest, t.ring[i].no)
	}
	return newest
}
