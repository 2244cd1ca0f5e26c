package tui

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/lockctl/lockctl/internal/export"
	"github.com/lockctl/lockctl/internal/hotkeys"
	"github.com/lockctl/lockctl/internal/lockdb"
	"github.com/lockctl/lockctl/internal/lockview"
	"github.com/lockctl/lockctl/store"
)

// What each page writes on E (exporter): its rows, in the columns package
// export gives the structs the readers return.

// listedRecord is a row of the locks table's export: the row as the table
// reads it, its state and, for a shared or semaphore key, its holders.
type listedRecord struct {
	lockview.ListedLock
	State   lockdb.State      `db:"state"`
	Holders []lockview.Holder `db:"holders"`
}

// exportView is the whole table under the filter and sort on screen: not
// the window the table shows, but every row the query matches, read again
// window by window (lockview.EachListed) when the export is written.
func (p *locksPage) exportView() exportView {
	filter, order, reference := p.filter, p.order, p.c.reference
	sorted := sortNames([]lockview.Sort{order})
	about := fmt.Sprintf("the lock table (%s), sorted by %s", plural(p.page.Matching, "lock", "locks"), sorted)
	if filter != "" {
		about = fmt.Sprintf("the %s matching %q, sorted by %s", plural(p.page.Matching, "lock", "locks"), filter, sorted)
	}
	return exportView{name: "locks", about: safe(about), columns: export.Columns(listedRecord{}),
		rows: func(ctx context.Context, db store.DBTX, add func([]any) error) error {
			if reference {
				return referenceRows(ctx, db, filter, add)
			}
			return lockview.EachListed(ctx, db, filter, order, func(rows []lockview.ListedLock) error {
				locks := make([]lockview.Lock, len(rows))
				for i, r := range rows {
					locks[i] = r.Lock
				}
				holders := map[string][]lockview.Holder{}
				if keys := lockview.GroupKeys(locks); len(keys) > 0 {
					var err error
					if holders, err = lockview.HoldersOf(ctx, db, keys); err != nil {
						return err
					}
				}
				for _, r := range rows {
					if err := add(export.Values(listedRecord{ListedLock: r, State: r.State(), Holders: holders[r.Key]})); err != nil {
						return err
					}
				}
				return nil
			})
		}}
}

// referenceRows are the reference service's table's rows the filter
// matches, by key: the table is small and read whole, as ls reads it.
func referenceRows(ctx context.Context, db store.DBTX, filter string, add func([]any) error) error {
	locks, err := lockview.ListReference(ctx, db, "")
	if err != nil {
		return err
	}
	for _, l := range locks {
		r := lockview.ListedLock{Lock: l}
		if !matchesFilter(r, filter) {
			continue
		}
		if err := add(export.Values(listedRecord{ListedLock: r, State: r.State()})); err != nil {
			return err
		}
	}
	return nil
}

// exportView is the event log as the page holds it, newest first, in the
// event reader's columns (lockview.Event).
func (p *eventsPage) exportView() exportView {
	events := slices.Clone(p.events)
	return exportView{name: "events", about: fmt.Sprintf("the event log: the %s on this page, newest first",
		plural(int64(len(events)), "event", "events")), columns: export.Columns(lockview.Event{}),
		rows: func(_ context.Context, _ store.DBTX, add func([]any) error) error {
			for _, e := range events {
				if err := add(export.Values(e)); err != nil {
					return err
				}
			}
			return nil
		}}
}

// waitRecord is a row of the blocking page's export: one wait, who holds
// the key waited for (or the key's state when nobody does) and whether
// the waiter is in a deadlock.
type waitRecord struct {
	Waiter   string        `db:"waiter"`
	Key      string        `db:"lock_key"`
	Holders  []string      `db:"holders"`
	Waited   time.Duration `db:"waited"`
	KeyState lockdb.State  `db:"key_state"`
	Deadlock bool          `db:"in_deadlock"`
}

// exportView is every wait the page read, longest first.
func (p *blockingPage) exportView() exportView {
	var b lockview.Blocking
	if p.data != nil {
		b = *p.data
	}
	return exportView{name: "waits", about: fmt.Sprintf("who waits for whom: %s, longest first",
		plural(int64(len(b.Waits)), "wait", "waits")), columns: export.Columns(waitRecord{}),
		rows: func(_ context.Context, _ store.DBTX, add func([]any) error) error {
			for _, w := range b.Waits {
				inCycle := slices.ContainsFunc(b.Deadlocks, func(c []string) bool { return slices.Contains(c, w.Waiter) })
				rec := waitRecord{Waiter: w.Waiter, Key: w.Key, Holders: w.Holders, Waited: w.Waited, KeyState: w.KeyState, Deadlock: inCycle}
				if err := add(export.Values(rec)); err != nil {
					return err
				}
			}
			return nil
		}}
}

// hotRecord is a row of the hot keys page's export: a key's counts over
// the window.
type hotRecord struct {
	Key       string        `db:"lock_key"`
	Window    time.Duration `db:"window"`
	TotalWait time.Duration `db:"total_wait"`
	Waits     int64         `db:"waits"`
	Steals    int64         `db:"steals"`
	Handoffs  int64         `db:"handoffs"`
	Forces    int64         `db:"forces"`
}

// exportView is the keys the page read, in its order.
func (p *hotKeysPage) exportView() exportView {
	var r hotkeys.Ranking
	if p.data != nil {
		r = *p.data
	}
	about := fmt.Sprintf("the hot keys of the last %s by %s: the %s ranked, of %d",
		windowName(p.win), p.by, plural(int64(len(r.Rows)), "key", "keys"), r.Keys)
	return exportView{name: "hotkeys", about: about, columns: export.Columns(hotRecord{}),
		rows: func(_ context.Context, _ store.DBTX, add func([]any) error) error {
			for _, row := range r.Rows {
				rec := hotRecord{Key: row.Key, Window: r.Window, TotalWait: row.WaitTime, Waits: row.Waits,
					Steals: row.Steals, Handoffs: row.Handoffs, Forces: row.Forces}
				if err := add(export.Values(rec)); err != nil {
					return err
				}
			}
			return nil
		}}
}
