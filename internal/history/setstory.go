package history

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// setStory tells what the history says of an owner of set calls, for a
// violation of property 7: the owner's ops (kind, set call or alone, key,
// result, outcome, token) and every event the log has for it (kind, key,
// token, transaction, detail), so the violation can be read without the
// run.
func (c *checker) setStory(owner string) string {
	var b strings.Builder
	b.WriteString("; ops:")
	for _, op := range c.ops {
		if op.Owner != owner {
			continue
		}
		call := op.Set
		if call == "" {
			call = "alone"
		}
		fmt.Fprintf(&b, " [%s %s %s=%s", op.Kind, call, op.Key, op.Result)
		if op.Outcome != "" {
			fmt.Fprintf(&b, "/%s", op.Outcome)
		}
		if op.Token != 0 {
			fmt.Fprintf(&b, " #%d", op.Token)
		}
		b.WriteString("]")
	}
	b.WriteString("; log:")
	for _, ev := range c.obs.Events {
		if deref(ev.Owner) != owner && (ev.PreviousOwner == nil || *ev.PreviousOwner != owner) {
			continue
		}
		fmt.Fprintf(&b, " [ev %d %s %s", ev.ID, ev.Kind, ev.Key)
		if ev.Token != nil {
			fmt.Fprintf(&b, " #%d", *ev.Token)
		}
		if tx, ok := c.obs.EventTx[ev.ID]; ok {
			fmt.Fprintf(&b, " tx %d", tx)
		}
		if deref(ev.Owner) != owner {
			fmt.Fprintf(&b, " to %q", deref(ev.Owner))
		}
		fmt.Fprintf(&b, " %s%s]", ev.OccurredAt.Format("15:04:05.000000"), detailText(ev.Detail))
	}
	return b.String()
}

// detailText is an event's detail as key=value pairs in key order.
func detailText(d map[string]any) string {
	var b strings.Builder
	for _, k := range slices.Sorted(maps.Keys(d)) {
		fmt.Fprintf(&b, " %s=%v", k, d[k])
	}
	return b.String()
}
