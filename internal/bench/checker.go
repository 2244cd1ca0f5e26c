package bench

import "sync"

// checker watches every grant and release of one series from the outside.
// A worker calls granted after its acquire returned and releasing before it
// sends its release, so a release that the database has committed was always
// recorded first: another worker's grant can only follow it. Seeing a holder
// on a key at grant time therefore means two owners held it at once.
type checker struct {
	mu        sync.Mutex
	holder    map[string]string // key → owner holding it now
	lastToken map[string]int64  // key → token of its latest grant

	exclusion  int64 // a grant while another owner held the key
	tokenOrder int64 // a grant whose token was not larger than the key's previous one
	lostLease  int64 // a release that found the lease gone (the TTL outlives a cycle, so it should not)
}

func newChecker() *checker {
	return &checker{holder: map[string]string{}, lastToken: map[string]int64{}}
}

func (c *checker) granted(key, owner string, token int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if h, ok := c.holder[key]; ok && h != owner {
		c.exclusion++
	}
	c.holder[key] = owner
	if last, ok := c.lastToken[key]; ok && token <= last {
		c.tokenOrder++
	}
	c.lastToken[key] = max(token, c.lastToken[key])
}

func (c *checker) releasing(key, owner string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.holder[key] == owner {
		delete(c.holder, key)
	}
}

func (c *checker) releaseLost() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.lostLease++
}

// Violations are the checker's counts for one series.
type Violations struct {
	Exclusion  int64 `json:"mutual_exclusion"`
	TokenOrder int64 `json:"token_order"`
	LostLease  int64 `json:"lost_lease"`
}

func (c *checker) violations() Violations {
	c.mu.Lock()
	defer c.mu.Unlock()
	return Violations{Exclusion: c.exclusion, TokenOrder: c.tokenOrder, LostLease: c.lostLease}
}

func (v Violations) add(o Violations) Violations {
	return Violations{v.Exclusion + o.Exclusion, v.TokenOrder + o.TokenOrder, v.LostLease + o.LostLease}
}

// Zero reports whether nothing was violated.
func (v Violations) Zero() bool { return v == Violations{} }
