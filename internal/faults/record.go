package faults

import (
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

// WriteResult is what a worker was told about one fenced write.
type WriteResult int

const (
	// Committed: Commit returned nil. The row must be in the table.
	Committed WriteResult = iota
	// RolledBack: the transaction failed before COMMIT was sent (fence
	// refused, statement failed) and was rolled back. The row must not be.
	RolledBack
	// Unknown: COMMIT was sent but no reply came (connection killed, server
	// restarted). Either way is correct.
	Unknown
)

// GrantRecord is a lease a worker was granted (outcome acquired or stolen).
type GrantRecord struct {
	Worker int
	Key    string
	Owner  string
	Token  int64
}

// LeaseEnd is how and when a worker stopped believing it held a lease.
type LeaseEnd struct {
	Worker int
	Key    string
	Owner  string
	Token  int64
	// At is this process's clock (wall and monotonic) when the worker saw
	// the Keepalive context end, or when it stopped the Keepalive itself.
	At time.Time
	// Lost: the Keepalive cancelled with ErrLeaseLost (the lease was lost
	// or could no longer be proven). False: the worker stopped it.
	Lost bool
	// Remaining is the last renewed lease's ValidFor() at At: the time left
	// before its local deadline (send time of the renewal + TTL). A lost
	// lease must have Remaining > 0.
	Remaining time.Duration
	// ExpiresAt is the database's expires_at of the last renewal the worker
	// knew of; the lease cannot be stolen before it.
	ExpiresAt time.Time
	Cause     string
	// OnArrival is the lease's ValidFor() when the grant returned to the
	// worker. Zero or less: the grant statement took a whole TTL (it waited
	// for the row), so the lease was past its local deadline before the
	// worker held it, and no keepalive can cancel before that deadline.
	OnArrival time.Duration
	// Diagnosis, printed with a violation: the keepalive's last database
	// call (start and end on this clock; end zero if it had not returned)
	// and the worst scheduling delay this process saw in the second before.
	CallStart, CallEnd time.Time
	SchedLag           time.Duration
}

// WriteRecord is one fenced-write attempt.
type WriteRecord struct {
	OpID   int64
	Worker int
	Key    string
	Owner  string
	Token  int64
	Result WriteResult
}

// Recorder is the workers' event log, safe for concurrent use.
type Recorder struct {
	mu       sync.Mutex
	grants   []GrantRecord
	ends     []LeaseEnd
	writes   []WriteRecord
	faults   map[string]int
	observed map[string]int
}

// NewRecorder returns an empty log.
func NewRecorder() *Recorder {
	return &Recorder{faults: map[string]int{}, observed: map[string]int{}}
}

func (r *Recorder) grant(g GrantRecord) {
	r.mu.Lock()
	r.grants = append(r.grants, g)
	r.mu.Unlock()
}

func (r *Recorder) end(e LeaseEnd) {
	r.mu.Lock()
	r.ends = append(r.ends, e)
	r.mu.Unlock()
}

func (r *Recorder) write(w WriteRecord) {
	r.mu.Lock()
	r.writes = append(r.writes, w)
	r.mu.Unlock()
}

// Fault counts one injected fault of kind.
func (r *Recorder) Fault(kind string) {
	r.mu.Lock()
	r.faults[kind]++
	r.mu.Unlock()
}

// Observe counts something a worker saw (an error class, a refused write).
func (r *Recorder) Observe(what string) {
	r.mu.Lock()
	r.observed[what]++
	r.mu.Unlock()
}

// Faults returns the injected faults per kind.
func (r *Recorder) Faults() map[string]int { return r.copyOf(r.faults) }

// Observed returns what the workers saw, per class.
func (r *Recorder) Observed() map[string]int { return r.copyOf(r.observed) }

func (r *Recorder) copyOf(m map[string]int) map[string]int {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make(map[string]int, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

func (r *Recorder) snapshot() ([]GrantRecord, []LeaseEnd, []WriteRecord) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]GrantRecord(nil), r.grants...), append([]LeaseEnd(nil), r.ends...),
		append([]WriteRecord(nil), r.writes...)
}

// FormatCounts prints a map as "a=1 b=2" in key order.
func FormatCounts(m map[string]int) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for i, k := range keys {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(k)
		b.WriteByte('=')
		b.WriteString(strconv.Itoa(m[k]))
	}
	return b.String()
}
