package faults

import (
	"sort"
	"strconv"
	"strings"
	"sync"
)

// counts tallies the faults injected and what the workers saw (error
// classes, refused writes), for the run's summary; safe for concurrent use.
// The lock history itself goes to a history.Recorder.
type counts struct {
	mu       sync.Mutex
	faults   map[string]int
	observed map[string]int
}

func newCounts() *counts {
	return &counts{faults: map[string]int{}, observed: map[string]int{}}
}

// Fault counts one injected fault of kind.
func (c *counts) Fault(kind string) {
	c.mu.Lock()
	c.faults[kind]++
	c.mu.Unlock()
}

// Observe counts something a worker saw.
func (c *counts) Observe(what string) {
	c.mu.Lock()
	c.observed[what]++
	c.mu.Unlock()
}

// Faults returns the injected faults per kind.
func (c *counts) Faults() map[string]int { return c.copyOf(c.faults) }

// Observed returns what the workers saw, per class.
func (c *counts) Observed() map[string]int { return c.copyOf(c.observed) }

func (c *counts) copyOf(m map[string]int) map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(map[string]int, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
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
