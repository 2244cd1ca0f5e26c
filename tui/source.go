package tui

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/lockctl/lockctl/internal/hotkeys"
	"github.com/lockctl/lockctl/internal/lockview"
	"github.com/lockctl/lockctl/store"
)

// Source answers the console's polls. The root keeps the schedule (one
// poll in flight, sequence numbers, ticks, back-off) and calls Poll from a
// command with a copied request; NewPoolSource reads the database for
// each. A server running many consoles can share one Source among them
// (serving identical requests within a refresh from one read): the root
// does not need to know.
type Source interface {
	Poll(ctx context.Context, req PollRequest) (Snapshot, error)
}

// PollRequest is what one poll should read: a plain comparable value, so
// a shared Source can key a cache on it.
type PollRequest struct {
	// Query is the window of rows around the home page's selection.
	Query lockview.ListQuery
	// HolderRows asks for the holders of the shared and semaphore keys
	// among the rows within HolderRows of the window's anchor: those the
	// table can show (0: none, the table is not on screen).
	HolderRows int
	// Events asks for the event log after EventsAfter (an event id).
	Events      bool
	EventsAfter int64
	// DetailKey asks for one key's row, waiters and history ("": none).
	DetailKey string
	// Blocking asks for who waits for whom (lockview.ReadBlocking).
	Blocking bool
	// Sessions asks for every session (lockview.ReadSessions).
	Sessions bool
	// HotKeys asks for the keys that cost the most over HotWindow, ranked
	// by HotBy (hotkeys.Tracker.Rank). HotWindow is also the window of
	// the detail page's wait and hold times (Detail.Times).
	HotKeys   bool
	HotWindow time.Duration
	HotBy     hotkeys.Column
	// Caps asks for the role's capabilities.
	Caps bool
	// Shape checks the table's shape first (store.TableShape).
	Shape bool
}

// Snapshot is everything one poll read. The optional parts are set only
// when the request asked for them.
type Snapshot struct {
	Page  lockview.Page
	Rates lockview.Rates
	// HandOff is the median release-to-grant time of recent hand-offs
	// to waiters (lockview.HandOffLatency).
	HandOff  lockview.HandOff
	Events   []lockview.Event        // newest first
	Detail   *Detail                 // DetailKey's
	Blocking *lockview.Blocking      // who waits for whom
	Sessions []lockview.Session      // every session, oldest first; nil: not asked (or the reference's table)
	HotKeys  *hotkeys.Ranking        // the hot keys of the window asked
	Caps     *store.RoleCapabilities // the role's
	// Holders are the running holders of the shared and semaphore keys
	// HolderRows asked for, by key; a key read with none has a nil entry,
	// a key not read has none.
	Holders map[string][]lockview.Holder
	// ReadAt is this process's clock (with its monotonic reading) when the
	// read finished: remaining TTLs and the data's age count from it, so a
	// snapshot handed out again later still counts down right.
	ReadAt  time.Time
	Latency time.Duration
	Server  string // address of the server it was read from
}

// Detail is one key's row, waiters and history, and, for a shared or
// semaphore key, its running holders in slot order.
type Detail struct {
	Key     string
	Lock    *lockview.ListedLock // nil: the key has no row
	Waiters []lockview.Waiter
	Events  []lockview.Event
	Holders []lockview.Holder
	// Times are the key's waits and holds over the request's HotWindow
	// (nil on the reference service's table, which logs none).
	Times *hotkeys.Times
}

// NewPoolSource reads every poll from pool, on one connection per poll.
// The table's counts, which cost a pass over it, are kept per filter and
// handed to each poll (lockview.ListQuery.Counts), so they are taken only
// when due, however many consoles poll through the source. The last
// hour's measures, which the hot keys page and the detail page's times
// are computed from, are kept in one hotkeys.Tracker, read on by the
// polls that ask for either.
func NewPoolSource(pool *pgxpool.Pool) Source {
	return &poolSource{pool: pool, hot: hotkeys.NewTracker()}
}

type poolSource struct {
	pool   *pgxpool.Pool
	hot    *hotkeys.Tracker
	mu     sync.Mutex
	counts map[string]lockview.Counts // by filter
}

// keptFilters bounds the counts kept: one per filter polled lately.
const keptFilters = 16

func (s *poolSource) Poll(ctx context.Context, req PollRequest) (Snapshot, error) {
	start := time.Now()
	req.Query.Counts = s.countsFor(req.Query.Filter)
	snap, err := readSnapshot(ctx, s.pool, s.hot, req)
	snap.ReadAt = time.Now()
	snap.Latency = snap.ReadAt.Sub(start)
	if err == nil && !snap.Page.Reference {
		s.keepCounts(req.Query.Filter, snap.Page.Counts)
	}
	return snap, err
}

func (s *poolSource) countsFor(filter string) lockview.Counts {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.counts[filter]
}

func (s *poolSource) keepCounts(filter string, c lockview.Counts) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.counts == nil || len(s.counts) >= keptFilters {
		s.counts = map[string]lockview.Counts{}
	}
	s.counts[filter] = c
}

func readSnapshot(ctx context.Context, pool *pgxpool.Pool, hot *hotkeys.Tracker, req PollRequest) (Snapshot, error) {
	// One connection for the whole poll, so the snapshot comes from one
	// server and the header can name it.
	db, err := pool.Acquire(ctx)
	if err != nil {
		return Snapshot{}, store.Interpret(err)
	}
	defer db.Release()
	snap, err := readFrom(ctx, db, req)
	if err == nil && !snap.Page.Reference {
		err = readHot(ctx, db, hot, req, &snap)
	}
	snap.Server = serverOf(db)
	return snap, err
}

// readFrom reads one poll's snapshot on db.
func readFrom(ctx context.Context, db store.DBTX, req PollRequest) (Snapshot, error) {
	var snap Snapshot
	var err error
	// Until a poll has read lockctl's table, each looks at the shape first,
	// so a reference table migrated while the console watches is read as
	// lockctl's from the next poll on. Migration never turns it back.
	if req.Shape {
		shape, err := store.TableShape(ctx, db)
		if err != nil {
			return snap, err
		}
		if shape == store.ShapeReference {
			return readReferenceSnapshot(ctx, db, req)
		}
	}
	if snap.Page, err = lockview.ListLocks(ctx, db, req.Query); err != nil {
		return snap, err
	}
	if snap.Rates, err = lockview.GrantRates(ctx, db, rateSpan, rateBucket); err != nil {
		return snap, err
	}
	if snap.HandOff, err = lockview.HandOffLatency(ctx, db, rateSpan); err != nil {
		return snap, err
	}
	if req.Caps {
		caps, err := store.Capabilities(ctx, db)
		if err != nil {
			return snap, err
		}
		snap.Caps = &caps
	}
	if req.Events {
		if snap.Events, err = lockview.RecentEvents(ctx, db, req.EventsAfter, eventsLimit); err != nil {
			return snap, err
		}
	}
	if req.Blocking {
		b, err := lockview.ReadBlocking(ctx, db)
		if err != nil {
			return snap, err
		}
		snap.Blocking = &b
	}
	if req.Sessions {
		if snap.Sessions, err = lockview.ReadSessions(ctx, db); err != nil {
			return snap, err
		}
	}
	if req.DetailKey != "" {
		if snap.Detail, err = readDetail(ctx, db, req.DetailKey, snap.Page.Rows); err != nil {
			return snap, err
		}
	}
	return snap, readHolders(ctx, db, req.HolderRows, &snap)
}

// hotBudget bounds how long one poll reads on the event log for the hot
// keys: the first poll of a busy hour reads part of it, and the page says
// how far it got, rather than holding the poll past its timeout.
const hotBudget = 500 * time.Millisecond

// readHot reads the hot keys and the detail page's times, when the
// request asks for them, from hot, read on first (readFrom has read the
// rest of the snapshot: the database's clock is its page's).
func readHot(ctx context.Context, db store.DBTX, hot *hotkeys.Tracker, req PollRequest, snap *Snapshot) error {
	if !req.HotKeys && snap.Detail == nil {
		return nil
	}
	if err := hot.Refresh(ctx, db, hotBudget); err != nil {
		return err
	}
	now := snap.Page.DBNow
	if req.HotKeys {
		r := hot.Rank(now, req.HotWindow, req.HotBy, hotRows)
		snap.HotKeys = &r
	}
	if snap.Detail != nil {
		t := hot.KeyTimes(now, req.HotWindow, snap.Detail.Key)
		snap.Detail.Times = &t
	}
	return nil
}

// readDetail reads key's row (from the window when it is there), waiters
// and history.
func readDetail(ctx context.Context, db store.DBTX, key string, window []lockview.ListedLock) (*Detail, error) {
	d := Detail{Key: key}
	if row, ok := findRow(window, key); ok {
		d.Lock = &row
	} else if l, found, err := lockview.Get(ctx, db, key); err != nil {
		return nil, err
	} else if found {
		d.Lock = &lockview.ListedLock{Lock: l}
	}
	var err error
	if d.Waiters, err = lockview.Waiters(ctx, db, key); err != nil {
		return nil, err
	}
	if d.Events, err = lockview.KeyEvents(ctx, db, key, detailEvents); err != nil {
		return nil, err
	}
	if d.Lock != nil {
		d.Lock.Waiters = int64(len(d.Waiters))
		if len(d.Waiters) > 0 {
			d.Lock.OldestWait = d.Waiters[0].Waited
		}
	}
	return &d, nil
}

// readHolders reads, in one statement and only when there are any, the
// running holders of the shared and semaphore keys the poll shows: the
// table's rows within rows of the window's anchor (the selection is on
// screen, so these are all the table can show until the cursor moves; a
// group's row moved on screen without them asks for a poll,
// locksPage.missingHolders) and the detail page's key. A key with many
// holders costs a row each: the console shows them all.
func readHolders(ctx context.Context, db store.DBTX, rows int, snap *Snapshot) error {
	var shown []lockview.Lock
	page := snap.Page
	if rows > 0 && page.Anchor >= 0 {
		for _, r := range page.Rows[max(0, page.Anchor-rows+1):min(len(page.Rows), page.Anchor+rows)] {
			shown = append(shown, r.Lock)
		}
	}
	tableKeys := lockview.GroupKeys(shown)
	keys := tableKeys
	d := snap.Detail
	if d != nil && d.Lock != nil {
		if k := lockview.GroupKeys([]lockview.Lock{d.Lock.Lock}); len(k) > 0 && !slices.Contains(keys, d.Key) {
			keys = append(slices.Clip(keys), d.Key)
		}
	}
	if len(keys) == 0 {
		return nil
	}
	holders, err := lockview.HoldersOf(ctx, db, keys)
	if err != nil {
		return err
	}
	if len(tableKeys) > 0 {
		snap.Holders = make(map[string][]lockview.Holder, len(tableKeys))
		for _, k := range tableKeys {
			snap.Holders[k] = holders[k]
		}
	}
	if d != nil {
		d.Holders = holders[d.Key]
	}
	return nil
}

// readReferenceSnapshot reads the reference service's table: its rows, and the
// selected one for the detail page. It keeps no history, rates or waiters.
func readReferenceSnapshot(ctx context.Context, db store.DBTX, req PollRequest) (Snapshot, error) {
	var snap Snapshot
	var err error
	if snap.Page, err = lockview.ListReferenceLocks(ctx, db, req.Query); err != nil {
		return snap, err
	}
	if req.DetailKey != "" {
		d := Detail{Key: req.DetailKey}
		if row, ok := findRow(snap.Page.Rows, req.DetailKey); ok {
			d.Lock = &row
		}
		snap.Detail = &d
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
