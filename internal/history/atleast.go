package history

import (
	"fmt"
	"time"

	"github.com/lockctl/lockctl/internal/lockdb"
)

// Kept is a lease held at least a period whose release, before its
// at-least point, left the key kept until then: what its holder read
// back after the release (the row kept, with the lease's token, and
// kept_until), on the database's clock. A release a crash could lose is
// no such fact: record only releases that waited for the disk.
type Kept struct {
	Key       string
	Token     int64
	KeptUntil time.Time
}

// CheckAtLeast checks the at-least contract against the event log: no key
// kept until a point is granted again (a grant event with a larger token)
// before that point. Nothing but an operator's end-delay frees a kept key
// sooner, and the suite injects none.
func CheckAtLeast(kept []Kept, obs Observed) []string {
	var violations []string
	for _, k := range kept {
		for _, e := range obs.Events {
			if e.Key != k.Key || e.Token == nil || *e.Token <= k.Token ||
				(e.Kind != lockdb.EventAcquired && e.Kind != lockdb.EventStolen) {
				continue
			}
			if e.OccurredAt.Before(k.KeptUntil) {
				violations = append(violations, fmt.Sprintf(
					"%s: token %d was granted at %s, before %s, the at-least point that token %d's release kept the key until",
					k.Key, *e.Token, e.OccurredAt.Format(time.RFC3339Nano), k.KeptUntil.Format(time.RFC3339Nano), k.Token))
			}
		}
	}
	return violations
}
