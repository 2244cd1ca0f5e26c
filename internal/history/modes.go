package history

import (
	"encoding/json"
	"fmt"

	"github.com/lockctl/lockctl/internal/lockview"
)

// The modes a key can be granted in (Op.Mode, and "mode" in a grant
// event's detail). An empty mode is exclusive.
const (
	ModeExclusive = "exclusive" // one holder at a time
	ModeShared    = "shared"    // any number of holders at once
	ModeSemaphore = "semaphore" // at most Op.Permits holders at once
)

// grantMode is the mode a lease was granted in.
type grantMode struct {
	mode    string // ModeExclusive, ModeShared or ModeSemaphore
	permits int    // a semaphore's N
}

var exclusiveMode = grantMode{mode: ModeExclusive}

func (m grantMode) exclusive() bool { return m.mode == ModeExclusive }

// compatible reports whether holders granted in modes m and o may hold one
// key at once, a semaphore's count aside: shared beside shared, a permit
// beside a permit. A key has one mode at a time, and an exclusive holder
// stands beside nobody.
func (m grantMode) compatible(o grantMode) bool {
	return !m.exclusive() && m.mode == o.mode
}

func (m grantMode) String() string {
	if m.mode == ModeSemaphore {
		return fmt.Sprintf("semaphore of %d permits", m.permits)
	}
	return m.mode
}

// countMode counts a grant event by its mode, and by the mode of the
// grant before it on key k.
func (c *checker) countMode(m grantMode, k *keyState) {
	switch {
	case m.mode == ModeShared:
		c.stats.SharedGrants++
	case m.mode == ModeSemaphore:
		c.stats.PermitGrants++
	case k.last != nil && !k.last.mode.exclusive():
		c.stats.ExclusiveAfterHolders++
	}
}

// newMode checks a mode and its permits as a client or the log gave them.
func newMode(mode string, permits int) (grantMode, error) {
	switch mode {
	case "", ModeExclusive:
		return exclusiveMode, nil
	case ModeShared:
		return grantMode{mode: ModeShared}, nil
	case ModeSemaphore:
		if permits < 1 {
			return grantMode{}, fmt.Errorf("a semaphore of %d permits", permits)
		}
		return grantMode{mode: ModeSemaphore, permits: permits}, nil
	}
	return grantMode{}, fmt.Errorf("unknown mode %q", mode)
}

// opMode is the mode a client asked for in a Grant.
func opMode(op Op) (grantMode, error) { return newMode(op.Mode, op.Permits) }

// isExclusive reports whether op asked for its key alone (an op of an
// unknown mode, reported by checkGrantMode, is taken as not).
func isExclusive(op Op) bool {
	m, err := opMode(op)
	return err == nil && m.exclusive()
}

// eventMode is the mode of a grant event, from its detail: "mode" absent
// is exclusive, and a semaphore's detail carries "permits". The detail is
// jsonb read into a map, so a number arrives as a float64.
func eventMode(ev lockview.Event) (grantMode, error) {
	mode, ok := ev.Detail["mode"].(string)
	if _, present := ev.Detail["mode"]; present && !ok {
		return grantMode{}, fmt.Errorf("mode %v is not a string", ev.Detail["mode"])
	}
	permits := 0
	switch n := ev.Detail["permits"].(type) {
	case nil:
	case float64:
		permits = int(n)
		if float64(permits) != n {
			return grantMode{}, fmt.Errorf("permits %v is not a whole number", n)
		}
	case int:
		permits = n
	case int64:
		permits = int(n)
	case json.Number:
		p, err := n.Int64()
		if err != nil {
			return grantMode{}, fmt.Errorf("permits %v: %w", n, err)
		}
		permits = int(p)
	default:
		return grantMode{}, fmt.Errorf("permits %v is not a number", n)
	}
	return newMode(mode, permits)
}

// checkGrantMode: a client was granted a key in the mode it asked for, as
// the log says it was.
func (c *checker) checkGrantMode(op Op) {
	asked, err := opMode(op)
	if err != nil {
		c.fail("client %d's grant of %q token %d: %v", op.Client, op.Key, op.Token, err)
		return
	}
	if logged, ok := c.modes[leaseID{op.Key, op.Token}]; ok && logged != asked {
		c.fail("client %d was granted %q token %d as %s; the log says %s", op.Client, op.Key, op.Token, asked, logged)
	}
}
