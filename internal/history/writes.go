package history

import (
	"sort"

	"github.com/lockctl/lockctl/locker"
)

// checkWrites verifies the guarded table (property 4). A write's lease is
// its key and token; it is stale once a grant that conflicts with the
// lease (checker.fencedBy: any grant after an exclusive one) was
// committed.
func (c *checker) checkWrites() {
	writes := append([]GuardedWrite(nil), c.obs.Writes...)
	seen := map[GuardedWrite]int64{}
	if len(c.obs.SeenToken) == len(c.obs.Writes) {
		for i, w := range c.obs.Writes {
			seen[w] = c.obs.SeenToken[i]
		}
	}
	sort.Slice(writes, func(i, j int) bool {
		if writes[i].Key != writes[j].Key {
			return writes[i].Key < writes[j].Key
		}
		return writes[i].CommitSeq < writes[j].CommitSeq
	})
	type writerSeq struct {
		writer string
		seq    int64
	}
	inTable := map[writerSeq]bool{}
	// newest is, on the key, the write committed so far whose lease was
	// granted last.
	var newest GuardedWrite
	for i, w := range writes {
		c.stats.FencedWrites++
		inTable[writerSeq{w.Writer, w.WriterSeq}] = true
		switch {
		case i == 0 || newest.Key != w.Key:
			newest = w
		case c.fencedAt(w, newest.Token):
			c.fail("stale write on %q: %q wrote with token %d (commit #%d) after %q wrote with token %d (commit #%d)",
				w.Key, w.Writer, w.Token, w.CommitSeq, newest.Writer, newest.Token, newest.CommitSeq)
		case c.grantedBefore(w.Key, newest.Token, w.Token):
			newest = w
		}
		if ev, ok := c.granted[leaseID{w.Key, w.Token}]; !ok || deref(ev.Owner) != w.Writer {
			c.fail("write #%d on %q by %q carries token %d, which was not granted to it", w.CommitSeq, w.Key, w.Writer, w.Token)
		}
		s, ok := seen[w]
		switch {
		case !ok || s == w.Token:
		case c.grantedBefore(w.Key, s, w.Token):
			c.fail("write #%d on %q by %q with token %d was made before its grant was committed (latest grant seen: %d)",
				w.CommitSeq, w.Key, w.Writer, w.Token, s)
		case c.fencedAt(w, s):
			c.fail("stale write on %q: %q wrote with token %d while grant %d was already committed", w.Key, w.Writer, w.Token, s)
		}
	}
	for _, op := range c.ops {
		if op.Kind != Write {
			continue
		}
		k := writerSeq{op.Owner, op.WriterSeq}
		switch op.Result {
		case OK:
			if !inTable[k] {
				c.fail("client %d's write #%d on %q (token %d) committed but is not in the table", op.Client, op.WriterSeq, op.Key, op.Token)
			}
		case Unknown:
			delete(inTable, k) // may or may not have committed
		default:
			if inTable[k] {
				c.fail("client %d's write #%d on %q (token %d) was refused (%s) but is in the table", op.Client, op.WriterSeq, op.Key, op.Token, op.Result)
			}
		}
		delete(inTable, k)
	}
	for k := range inTable {
		c.fail("the table has write #%d by %q, which no client made", k.seq, k.writer)
	}
}

// grantedBefore reports whether token a was granted on key before token
// b: in the log's order when it has both grants, else (a token 0 is no
// grant at all) in token order, as on an exclusive key.
func (c *checker) grantedBefore(key string, a, b int64) bool {
	ga, okA := c.granted[leaseID{key, a}]
	gb, okB := c.granted[leaseID{key, b}]
	if okA && okB {
		return ga.ID < gb.ID
	}
	return a < b
}

// fencedAt reports whether write w's lease was fenced off by the time
// token's grant on its key was committed: a grant conflicting with the
// lease (fencedBy) came no later than token's. In token order when the log
// lacks either grant, as on an exclusive key, where every later grant
// conflicts.
func (c *checker) fencedAt(w GuardedWrite, token int64) bool {
	g, okG := c.granted[leaseID{w.Key, token}]
	_, okW := c.granted[leaseID{w.Key, w.Token}]
	if !okG || !okW {
		return token > w.Token
	}
	f, fenced := c.fencedBy[leaseID{w.Key, w.Token}]
	return fenced && f.ID <= g.ID
}

func (c *checker) countOps() {
	c.stats.ClientOps = len(c.ops)
	for _, op := range c.ops {
		switch {
		case op.Result == OK && (op.Kind == Renew || (op.Kind == Grant && op.Outcome == string(locker.Renewed))):
			c.stats.Renewals++
		case op.Kind == Grant && op.Set != "" && (op.Result == Held || op.Result == GaveUp):
			// counted per call in SetsRefused
		case op.Kind == Grant && op.Result == Held:
			c.stats.Held++
		case op.Kind == Grant && op.Result == GaveUp:
			c.stats.GaveUp++
		case op.Kind == Write && op.Result == NotHeld:
			c.stats.RejectedWrites++
		case op.Kind == Write && op.Result == OK:
			c.stats.WritesSeen++
		case op.Result == Unknown:
			c.stats.Unknown++
		case op.Result == Failed:
			c.stats.Failed++
		}
	}
}
