package tui

import (
	"context"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/lockctl/lockctl/internal/lockview"
	"github.com/lockctl/lockctl/locker"
	"github.com/lockctl/lockctl/store"
)

const (
	// pollTimeout bounds one poll, so a hung server shows as a state
	// within seconds instead of freezing the table.
	pollTimeout = 3 * time.Second
	// actionTimeout bounds an operator action.
	actionTimeout = 5 * time.Second
	// frameEvery is how often countdowns are redrawn between polls.
	frameEvery = 100 * time.Millisecond
	// rateSpan and rateBucket shape the contention sparklines.
	rateSpan, rateBucket = time.Minute, 5 * time.Second
	// eventsLimit bounds the events read per poll and kept in the pane.
	eventsLimit = 200
	// detailEvents is how much of a key's history the detail pane shows.
	detailEvents = 30
)

// pollRequest is a copy of what one poll should read, taken in Update so
// the command never touches the model.
type pollRequest struct {
	seq, querySeq int
	query         lockview.ListQuery
	wantEvents    bool
	eventsAfter   int64
	detailKey     string // "" when the detail pane is closed
	wantCaps      bool   // read the role's capabilities too
	wantShape     bool   // check the table's shape first (store.TableShape)
}

// poll reads one snapshot: the window of rows, the rates, and what an open
// pane needs.
func poll(ctx context.Context, db *pgxpool.Pool, req pollRequest) tea.Cmd {
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(ctx, pollTimeout)
		defer cancel()
		start := time.Now()
		snap, err := readSnapshot(ctx, db, req)
		snap.receivedAt = time.Now()
		snap.latency = snap.receivedAt.Sub(start)
		return pageLoadedMsg{seq: req.seq, querySeq: req.querySeq, snap: snap, err: err}
	}
}

func readSnapshot(ctx context.Context, pool *pgxpool.Pool, req pollRequest) (snapshot, error) {
	var snap snapshot
	// One connection for the whole poll, so the snapshot comes from one
	// server and the header can name it.
	db, err := pool.Acquire(ctx)
	if err != nil {
		return snap, store.Interpret(err)
	}
	defer db.Release()
	snap.server = serverOf(db)
	// Until a poll has read lockctl's table, each looks at the shape first,
	// so a seed table migrated while the console watches is read as
	// lockctl's from the next poll on. Migration never turns it back.
	if req.wantShape {
		shape, err := store.TableShape(ctx, db)
		if err != nil {
			return snap, err
		}
		if shape == store.ShapeSeed {
			seed, err := readSeedSnapshot(ctx, db, req)
			seed.server = snap.server
			return seed, err
		}
	}
	if snap.page, err = lockview.ListLocks(ctx, db, req.query); err != nil {
		return snap, err
	}
	if snap.rates, err = lockview.GrantRates(ctx, db, rateSpan, rateBucket); err != nil {
		return snap, err
	}
	if snap.handOver, err = lockview.HandOverLatency(ctx, db, rateSpan); err != nil {
		return snap, err
	}
	if req.wantCaps {
		caps, err := store.Capabilities(ctx, db)
		if err != nil {
			return snap, err
		}
		snap.caps = &caps
	}
	if req.wantEvents {
		if snap.events, err = lockview.RecentEvents(ctx, db, req.eventsAfter, eventsLimit); err != nil {
			return snap, err
		}
	}
	if req.detailKey != "" {
		d := detailData{key: req.detailKey}
		if row, ok := findRow(snap.page.Rows, req.detailKey); ok {
			d.lock = &row
		} else if l, found, err := store.Get(ctx, db, req.detailKey); err != nil {
			return snap, err
		} else if found {
			d.lock = &lockview.ListedLock{Lock: l}
		}
		if d.waiters, err = lockview.Waiters(ctx, db, req.detailKey); err != nil {
			return snap, err
		}
		if d.events, err = lockview.KeyEvents(ctx, db, req.detailKey, detailEvents); err != nil {
			return snap, err
		}
		if d.lock != nil {
			d.lock.Waiters = int64(len(d.waiters))
			if len(d.waiters) > 0 {
				d.lock.OldestWait = d.waiters[0].Waited
			}
		}
		snap.detail = &d
	}
	return snap, nil
}

// readSeedSnapshot reads the reference service's table: its rows, and the
// selected one for the detail pane. It keeps no history, rates or waiters.
func readSeedSnapshot(ctx context.Context, db store.DBTX, req pollRequest) (snapshot, error) {
	var snap snapshot
	var err error
	if snap.page, err = lockview.ListSeedLocks(ctx, db, req.query); err != nil {
		return snap, err
	}
	if req.detailKey != "" {
		d := detailData{key: req.detailKey}
		if row, ok := findRow(snap.page.Rows, req.detailKey); ok {
			d.lock = &row
		}
		snap.detail = &d
	}
	return snap, nil
}

func findRow(rows []lockview.ListedLock, key string) (lockview.ListedLock, bool) {
	for _, r := range rows {
		if r.Key == key {
			return r, true
		}
	}
	return lockview.ListedLock{}, false
}

// pollTick arms the next poll.
func pollTick(d time.Duration, gen int) tea.Cmd {
	return tea.Tick(d, func(time.Time) tea.Msg { return pollTickMsg{gen: gen} })
}

// frameTick arms the next countdown redraw.
func frameTick() tea.Cmd {
	return tea.Tick(frameEvery, func(time.Time) tea.Msg { return frameMsg{} })
}

// actionRequest is a copy of an action's arguments.
type actionRequest struct {
	seq   int
	kind  actionKind
	key   string
	owner string
	token int64
	ttl   time.Duration
}

// runAction performs one operator action through the locker.
func runAction(ctx context.Context, db *pgxpool.Pool, lk *locker.Locker, req actionRequest) tea.Cmd {
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(ctx, actionTimeout)
		defer cancel()
		done := actionDoneMsg{seq: req.seq, kind: req.kind, key: req.key, token: req.token}
		switch req.kind {
		case actAcquire:
			l, err := lk.WithTTL(req.ttl)
			if err != nil {
				done.err = err
				break
			}
			done.lease, done.err = l.TryAcquire(ctx, db, req.key, req.owner)
		case actRenew:
			lease := locker.LeaseOf(req.key, req.owner, req.token)
			lease.TTL = req.ttl
			done.lease, done.err = lk.Renew(ctx, db, lease)
		case actExpire:
			done.lease, done.err = lk.ForceExpire(ctx, db, req.key, req.token)
		case actRelease:
			done.lease, done.err = lk.ForceRelease(ctx, db, req.key, req.token)
		}
		return done
	}
}
