package cli

import (
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/lockctl/lockctl/internal/export"
	"github.com/lockctl/lockctl/internal/lockdb"
	"github.com/lockctl/lockctl/internal/lockview"
	"github.com/lockctl/lockctl/internal/textsafe"
	"github.com/lockctl/lockctl/locker"
)

// lockRow is one element of `ls --json`.
type lockRow struct {
	Key           string         `json:"key"`
	Owner         string         `json:"owner"` // holder, or last holder when free; "*" for a shared or semaphore key
	Token         int64          `json:"token"`
	ExpiresAt     time.Time      `json:"expires_at"`
	TTLMs         int64          `json:"ttl_ms"`
	State         lockdb.State   `json:"state"`
	RemainingMs   int64          `json:"remaining_ms"` // negative: expired that long ago
	HeldForMs     int64          `json:"held_for_ms"`  // since the current grant
	AcquiredAt    time.Time      `json:"acquired_at"`
	RenewedAt     *time.Time     `json:"renewed_at"`
	RenewCount    int32          `json:"renew_count"`
	ReleasedAt    *time.Time     `json:"released_at"`
	GrantKind     string         `json:"grant_kind"`
	PreviousOwner *string        `json:"previous_owner"`
	PreviousToken *int64         `json:"previous_token"`
	Metadata      map[string]any `json:"metadata"`
	// DelayUntil is set while the key is in its lock-delay (state
	// delayed): nobody is granted it before then.
	DelayUntil *time.Time `json:"delay_until,omitempty"`
	// KeptUntil is set while a release keeps the key until its hold's
	// at-least point (state kept; delay_until is then the same).
	KeptUntil *time.Time `json:"kept_until,omitempty"`
	// Mode is exclusive, shared or semaphore; Permits a semaphore's.
	Mode    string `json:"mode"`
	Permits int32  `json:"permits,omitzero"`
	// Holders are a shared or semaphore key's running leases (none once
	// its group ended); nil, and left out, for a key held alone.
	Holders []holderJSON `json:"holders,omitzero"`
}

func toLockRow(l lockview.Lock, holders []lockview.Holder) lockRow {
	r := lockRow{
		Key: l.Key, Owner: l.Owner, Token: l.Token, ExpiresAt: utc(l.ExpiresAt),
		TTLMs: l.TTL.Milliseconds(), State: l.State(), RemainingMs: l.Remaining.Milliseconds(),
		HeldForMs: l.HeldFor.Milliseconds(), AcquiredAt: utc(l.AcquiredAt), RenewedAt: utcPtr(l.RenewedAt),
		RenewCount: l.RenewCount, ReleasedAt: utcPtr(l.ReleasedAt), GrantKind: l.GrantKind,
		PreviousOwner: l.PreviousOwner, PreviousToken: l.PreviousToken, Metadata: l.Metadata,
		DelayUntil: utcPtr(l.DelayUntil), KeptUntil: utcPtr(l.KeptUntil), Mode: locker.ModeExclusive,
	}
	if l.Mode == locker.ModeShared || l.Mode == locker.ModeSemaphore {
		r.Mode, r.Permits, r.Holders = l.Mode, l.Permits, holdersJSON(holders)
	}
	return r
}

// holdersBatch bounds how many rows ls holds back while it reads the
// holders of the shared and semaphore keys among them: one read per batch,
// and memory that does not grow with the table.
const holdersBatch = 256

// lockRecord is one row of `ls --csv`: the lock row as lockview reads it,
// its state, and a running shared or semaphore key's holders (package
// export names the columns).
type lockRecord struct {
	lockview.Lock
	State   lockdb.State      `db:"state"`
	Holders []lockview.Holder `db:"holders"`
}

// lockPrinter prints lock rows as ls does, one at a time: an aligned
// table, one JSON array, or CSV. A running shared or semaphore key's row
// waits, with the rows after it (to keep key order), until the holders of
// a batch are read.
type lockPrinter struct {
	table *tableWriter
	json  *jsonArray
	csv   export.Writer
	// holders reads the running leases of the holders of keys.
	holders func(keys []string) (map[string][]lockview.Holder, error)
	pending []lockview.Lock
}

func newLockPrinter(env Env, w io.Writer, opts LsOptions, holders func(keys []string) (map[string][]lockview.Holder, error)) *lockPrinter {
	switch {
	case opts.JSON:
		return &lockPrinter{json: newJSONArray(w), holders: holders}
	case opts.CSV:
		return &lockPrinter{csv: newCSV(env, w, export.Columns(lockRecord{})), holders: holders}
	}
	return &lockPrinter{holders: holders,
		table: newTableWriter(w, "no locks", []string{"KEY", "OWNER", "TOKEN", "STATE", "REMAINING", "HELD-FOR"})}
}

func (p *lockPrinter) add(l lockview.Lock) error {
	if len(p.pending) == 0 && !isGroup(l.LockInfo) {
		return p.print(l, nil)
	}
	p.pending = append(p.pending, l)
	if len(p.pending) >= holdersBatch {
		return p.flush()
	}
	return nil
}

// flush reads the holders of the pending rows' groups and prints the rows.
func (p *lockPrinter) flush() error {
	if len(p.pending) == 0 {
		return nil
	}
	holders, err := p.holders(lockview.GroupKeys(p.pending))
	if err != nil {
		return err
	}
	for _, l := range p.pending {
		if err := p.print(l, holders[l.Key]); err != nil {
			return err
		}
	}
	p.pending = p.pending[:0]
	return nil
}

// print prints l, with its holders when it is a shared or semaphore key.
func (p *lockPrinter) print(l lockview.Lock, holders []lockview.Holder) error {
	switch {
	case p.json != nil:
		return wrapOutput(p.json.add(toLockRow(l, holders)))
	case p.csv != nil:
		return wrapOutput(p.csv.Write(export.Values(lockRecord{Lock: l, State: l.State(), Holders: holders})))
	}
	remaining, heldFor := "-", "-"
	switch l.State() {
	case lockdb.StateHeld, lockdb.StateExpiring:
		remaining, heldFor = formatDuration(l.Remaining), formatDuration(l.HeldFor)
	case lockdb.StateExpired:
		heldFor = formatDuration(l.HeldFor)
	case lockdb.StateDelayed:
		// What is left is the lock-delay's, not a lease's.
		remaining = "delay " + formatDuration(l.DelayUntil.Sub(l.DBNow))
	case lockdb.StateKept:
		// What is left is the hold's at-least period.
		remaining = "kept " + formatDuration(l.KeptUntil.Sub(l.DBNow))
	}
	return wrapOutput(p.table.add([]string{textsafe.Escape(l.Key), ownerCell(l, holders),
		strconv.FormatInt(l.Token, 10), string(l.State()), remaining, heldFor}))
}

// ownerCell is the table's OWNER of l: its holder, escaped; for a shared
// or semaphore key, whose row's owner is "*", the mode and how many hold
// it ("shared, 3 holders", "semaphore, 2/3 used").
func ownerCell(l lockview.Lock, holders []lockview.Holder) string {
	switch l.Mode {
	case locker.ModeShared:
		return "shared, " + plural(len(holders), "holder", "holders")
	case locker.ModeSemaphore:
		return fmt.Sprintf("semaphore, %d/%d used", len(holders), l.Permits)
	}
	return textsafe.Escape(l.Owner)
}

// close finishes the listing: the rows held back, then the array's
// closing bracket, or the table.
func (p *lockPrinter) close() error {
	if err := p.flush(); err != nil {
		return err
	}
	switch {
	case p.json != nil:
		return wrapOutput(p.json.close())
	case p.csv != nil:
		return wrapOutput(p.csv.Close())
	}
	return wrapOutput(p.table.close())
}

func wrapOutput(err error) error {
	if err != nil {
		return outputError{err}
	}
	return nil
}
