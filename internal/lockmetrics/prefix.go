package lockmetrics

import (
	"strings"
	"sync"
)

// Defaults of Prefixes.
const (
	DefaultSeparator   = ":"
	DefaultMaxPrefixes = 100
	// MaxMaxPrefixes bounds MaxPrefixes: each prefix is a few dozen series.
	MaxMaxPrefixes = 10000
)

// Other is the label value of every prefix past the cap. A key whose
// prefix is literally "other" is counted with them.
const Other = "other"

// Prefixes labels keys by their prefix, keeping at most Max distinct
// labels besides Other. Safe for concurrent use.
type Prefixes struct {
	sep string
	max int

	mu   sync.Mutex
	seen map[string]struct{}
}

// NewPrefixes labels by the part of a key before sep (the whole key when
// it has none; "" is DefaultSeparator), the first max distinct prefixes
// each their own (max 0: DefaultMaxPrefixes).
func NewPrefixes(sep string, max int) *Prefixes {
	if sep == "" {
		sep = DefaultSeparator
	}
	if max <= 0 {
		max = DefaultMaxPrefixes
	}
	return &Prefixes{sep: sep, max: max, seen: map[string]struct{}{}}
}

// Of is key's label: its prefix, or Other once Max others were seen.
func (p *Prefixes) Of(key string) string {
	prefix, _, _ := strings.Cut(key, p.sep)
	p.mu.Lock()
	defer p.mu.Unlock()
	if _, ok := p.seen[prefix]; ok {
		return prefix
	}
	if len(p.seen) >= p.max {
		return Other
	}
	p.seen[prefix] = struct{}{}
	return prefix
}
