package patroni_test

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/lockctl/lockctl/internal/fencetoken"
	"github.com/lockctl/lockctl/internal/lockdb"
	"github.com/lockctl/lockctl/locker"
	"github.com/lockctl/lockctl/store"
)

// journal is what the clients were told, with when they asked and when
// they heard: the checks judge the cluster by its acknowledgements alone.
type journal struct {
	mu       sync.Mutex
	grants   []grant
	releases []release
	changes  []change
}

// grant is one new lease a client was given.
type grant struct {
	key, owner string
	token      int64
	// sent is when the call that made it was sent (for a waiter: when the
	// release that handed it on was sent); acked when its answer arrived.
	sent, acked time.Time
}

// release is one release a client was told had committed.
type release struct {
	key   string
	token int64
	acked time.Time
}

// change is a change of primary, from when the test set it off to when
// the cluster had its new leader.
type change struct {
	what        string
	began, done time.Time
}

func (j *journal) granted(g grant) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.grants = append(j.grants, g)
}

func (j *journal) released(r release) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.releases = append(j.releases, r)
}

func (j *journal) changed(c change) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.changes = append(j.changes, c)
}

// grantsSince counts the grants whose call was sent after t.
func (j *journal) grantsSince(t time.Time) int {
	j.mu.Lock()
	defer j.mu.Unlock()
	n := 0
	for _, g := range j.grants {
		if g.sent.After(t) {
			n++
		}
	}
	return n
}

// tokenViolations lists, for each change of primary, the grants made after
// it (sent once the new leader led) whose token is not above every token
// acknowledged before the change began. noGrants lists the changes no
// grant followed, which would leave the check empty.
func (j *journal) tokenViolations() (violations, noGrants []string) {
	j.mu.Lock()
	defer j.mu.Unlock()
	for _, c := range j.changes {
		var before grant
		for _, g := range j.grants {
			if g.acked.Before(c.began) && g.token > before.token {
				before = g
			}
		}
		after := 0
		for _, g := range j.grants {
			if !g.sent.After(c.done) {
				continue
			}
			after++
			if g.token <= before.token {
				violations = append(violations, fmt.Sprintf("after the %s, %s got %s as %s; %s got %s as %s before it",
					c.what, g.key, fencetoken.Format(g.token), g.owner, before.key, fencetoken.Format(before.token), before.owner))
			}
		}
		if after == 0 {
			noGrants = append(noGrants, c.what)
		}
	}
	return violations, noGrants
}

// undoneReleases lists the acknowledged releases the final primary does
// not show: the key held under the released token, or an older token than
// the released one (the row went back in time).
func (j *journal) undoneReleases(ctx context.Context, lk *locker.Locker, db locker.DBTX) ([]string, error) {
	j.mu.Lock()
	last := map[string]release{} // the newest release of each key is the one to look for
	for _, r := range j.releases {
		if r.token > last[r.key].token {
			last[r.key] = r
		}
	}
	j.mu.Unlock()
	var undone []string
	for key, r := range last {
		info, found, err := store.Get[lockdb.LockInfo](ctx, db, key)
		if err != nil {
			return nil, err
		}
		switch {
		case !found || info.Token < r.token:
			undone = append(undone, fmt.Sprintf("%s: released %s, the row has %v", key, fencetoken.Format(r.token), rowText(info, found)))
		case info.Token == r.token && info.ReleasedAt == nil:
			undone = append(undone, fmt.Sprintf("%s: released %s, held again under it (%s)", key, fencetoken.Format(r.token), info.State()))
		}
	}
	return undone, nil
}

func rowText(info lockdb.LockInfo, found bool) string {
	if !found {
		return "no row"
	}
	return "token " + fencetoken.Format(info.Token)
}
