package history

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/lockctl/lockctl/locker"
)

// setCall is one a set's Acquire as its client recorded it: an
// op per key.
type setCall struct {
	id    string
	owner string
	ops   []Op
	// keys the call may be granted in one transaction, sorted: every key,
	// less those a granted call was told it already held (renewed).
	keys []string
}

// checkSets verifies property 7: a set's keys are granted in one
// transaction, all of them or none, so no reader ever sees part of a set
// granted. Each granted set call's grant events share one transaction; a
// call is never told only some of its keys were granted; and every
// transaction that granted keys to a set's owner granted exactly whole sets
// that owner asked for (keys it took with single-key calls aside), so no
// key of a set was granted alone, even to a call whose reply was lost.
func (c *checker) checkSets() {
	calls := map[string]*setCall{}
	var order []*setCall
	for _, op := range c.ops {
		if op.Kind != Grant || op.Set == "" {
			continue
		}
		s := calls[op.Set]
		if s == nil {
			s = &setCall{id: op.Set, owner: op.Owner}
			calls[op.Set] = s
			order = append(order, s)
		}
		s.ops = append(s.ops, op)
	}
	if len(order) == 0 {
		return
	}
	if c.obs.EventTx == nil {
		c.fail("%d set calls were made, but the event log's transactions were not observed (history.CreateGuarded, Observe)", len(order))
		return
	}
	setsOf := map[string][]*setCall{}
	for _, s := range order {
		c.checkSetCall(s)
		setsOf[s.owner] = append(setsOf[s.owner], s)
	}
	c.checkSetTransactions(setsOf)
}

// checkSetCall: a set call's client saw all its keys granted in one
// transaction, or none.
func (c *checker) checkSetCall(s *setCall) {
	granted := 0
	for _, op := range s.ops {
		if op.Result == OK {
			granted++
		}
		if op.Result != OK || op.Outcome != string(locker.Renewed) {
			s.keys = append(s.keys, op.Key)
		}
	}
	sort.Strings(s.keys)
	switch {
	case granted == 0:
		if s.ops[0].Result == Held || s.ops[0].Result == GaveUp {
			c.stats.SetsRefused++
		}
		return
	case granted < len(s.ops):
		c.fail("partial grant of a set: call %s of %q was told %d of its %d keys were granted", s.id, s.owner, granted, len(s.ops))
		return
	}
	c.stats.SetGrants++
	c.stats.SetKeys += granted
	if mixedModes(s.ops) {
		c.stats.MixedSetGrants++
	}
	var first Op
	var firstTx int64
	for _, op := range s.ops {
		if op.Outcome == string(locker.Renewed) {
			continue
		}
		ev, ok := c.granted[leaseID{op.Key, op.Token}]
		if !ok {
			continue // reported by checkClientGrants
		}
		tx, ok := c.obs.EventTx[ev.ID]
		if !ok {
			c.fail("event %d (grant of %q token %d) has no recorded transaction", ev.ID, op.Key, op.Token)
			continue
		}
		if first.Key == "" {
			first, firstTx = op, tx
		} else if tx != firstTx {
			c.fail("partial grant of a set: call %s granted %q token %d to %q in transaction %d, but %q token %d in transaction %d%s",
				s.id, first.Key, first.Token, s.owner, firstTx, op.Key, op.Token, tx, c.setStory(s.owner))
		}
	}
}

// mixedModes reports whether a set call's keys asked for modes of more
// than one kind (a semaphore's permits aside).
func mixedModes(ops []Op) bool {
	first, _ := opMode(ops[0])
	for _, op := range ops[1:] {
		if m, _ := opMode(op); m.mode != first.mode {
			return true
		}
	}
	return false
}

// checkSetTransactions: each transaction's grants to an owner of set calls,
// less the keys it asked for alone, are a union of whole sets it asked for.
// A key asked for alone is one a single-key call was granted anew (its
// token: a renewal grants nothing, the lease it renews may be a set's), or,
// where such a call's reply was lost, one of the key's grants to the owner
// that whole sets do not already account for in their transaction.
func (c *checker) checkSetTransactions(setsOf map[string][]*setCall) {
	single := map[leaseID]bool{}     // granted anew to single-key calls
	singleAsk := map[keyOwner]bool{} // single-key calls whose reply was lost
	for _, op := range c.ops {
		if op.Kind != Grant || op.Set != "" {
			continue
		}
		switch {
		case op.Result == OK && op.Outcome != string(locker.Renewed):
			single[leaseID{op.Key, op.Token}] = true
		case op.Result == Unknown:
			singleAsk[keyOwner{op.Key, op.Owner}] = true
		}
	}
	type txOwner struct {
		tx    int64
		owner string
	}
	groups := map[txOwner][]string{}
	var order []txOwner
	for id, ev := range c.granted {
		owner := deref(ev.Owner)
		if setsOf[owner] == nil || single[id] {
			continue
		}
		tx, ok := c.obs.EventTx[ev.ID]
		if !ok {
			continue // reported with its set call, if it had one
		}
		g := txOwner{tx, owner}
		if groups[g] == nil {
			order = append(order, g)
		}
		groups[g] = append(groups[g], id.key)
	}
	sort.Slice(order, func(i, j int) bool { return order[i].tx < order[j].tx })
	for _, g := range order {
		keys := groups[g]
		sort.Strings(keys)
		covered := map[string]bool{}
		for _, s := range setsOf[g.owner] {
			if isSubset(s.keys, keys) {
				for _, k := range s.keys {
					covered[k] = true
				}
			}
		}
		keys = slices.DeleteFunc(keys, func(k string) bool { return !covered[k] && singleAsk[keyOwner{k, g.owner}] })
		if len(covered) == len(keys) {
			continue
		}
		var asked []string
		for _, s := range setsOf[g.owner] {
			for _, k := range keys {
				if slices.Contains(s.keys, k) {
					asked = append(asked, fmt.Sprintf("%s %v", s.id, s.keys))
					break
				}
			}
		}
		c.fail("partial grant of a set: transaction %d granted %q only %v, not whole sets it asked for (%s)%s",
			g.tx, g.owner, keys, strings.Join(asked, ", "), c.setStory(g.owner))
	}
}

// isSubset reports whether every element of a is in sorted b.
func isSubset(a, b []string) bool {
	for _, x := range a {
		if _, found := slices.BinarySearch(b, x); !found {
			return false
		}
	}
	return true
}

type keyOwner struct{ key, owner string }
