package faults

import (
	"context"
	"fmt"
	"sort"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/lockctl/lockctl/internal/lockview"
	"github.com/lockctl/lockctl/store"
)

// Report is the checker's verdict.
type Report struct {
	// Checked counts what was verified, per kind of item.
	Checked map[string]int
	// Violations lists every broken property, one sentence each.
	Violations []string
}

func (r *Report) violate(format string, args ...any) {
	r.Violations = append(r.Violations, fmt.Sprintf(format, args...))
}

// WriteRow is one committed row of the guarded table.
type WriteRow struct {
	OpID        int64     `db:"op_id"`
	Key         string    `db:"lock_key"`
	Owner       string    `db:"owner_id"`
	Token       int64     `db:"fence_token"`
	Seq         int64     `db:"key_seq"`
	CommittedAt time.Time `db:"committed_at"`
}

// GrantRow is one acquired or stolen event: a grant that committed.
type GrantRow struct {
	EventID       int64     `db:"event_id"`
	Key           string    `db:"lock_key"`
	Owner         string    `db:"owner_id"`
	Token         int64     `db:"fence_token"`
	Kind          string    `db:"kind"`
	PreviousToken *int64    `db:"previous_token"`
	OccurredAt    time.Time `db:"occurred_at"`
	CommittedAt   time.Time `db:"committed_at"`
}

// Commit timestamps (track_commit_timestamp=on) order transactions that
// depend on each other: the next grant of a key must wait for a fenced
// write's row lock, so it commits after the write.
const guardedRowsSQL = `
SELECT w.op_id, w.lock_key, w.owner_id, w.fence_token, w.key_seq,
       pg_xact_commit_timestamp(w.xmin) AS committed_at
FROM fault_guarded_write w ORDER BY w.lock_key, w.key_seq`

const grantRowsSQL = `
SELECT e.event_id, e.lock_key, e.owner_id, e.fence_token, e.kind, e.previous_token, e.occurred_at,
       pg_xact_commit_timestamp(e.xmin) AS committed_at
FROM distributed_lock_event e WHERE e.kind IN ('acquired', 'stolen')
ORDER BY e.lock_key, e.fence_token`

// LoadAndCheck reads the guarded table and the grant events from db and
// checks them against rec.
func LoadAndCheck(ctx context.Context, db store.DBTX, rec *Recorder) (Report, error) {
	rows, err := db.Query(ctx, guardedRowsSQL)
	if err != nil {
		return Report{}, fmt.Errorf("faults: read guarded table: %w", err)
	}
	writes, err := pgx.CollectRows(rows, pgx.RowToStructByName[WriteRow])
	if err != nil {
		return Report{}, fmt.Errorf("faults: read guarded table: %w", err)
	}
	rows, err = db.Query(ctx, grantRowsSQL)
	if err != nil {
		return Report{}, fmt.Errorf("faults: read grant events: %w", err)
	}
	grants, err := pgx.CollectRows(rows, pgx.RowToStructByName[GrantRow])
	if err != nil {
		return Report{}, fmt.Errorf("faults: read grant events: %w", err)
	}
	return Check(writes, grants, rec), nil
}

// Check verifies the properties listed in the package doc. It is a pure
// function of its inputs so it can be tested on hand-made histories.
func Check(writes []WriteRow, grants []GrantRow, rec *Recorder) Report {
	r := Report{Checked: map[string]int{}}
	localGrants, ends, attempts := rec.snapshot()

	// No token handed out twice (database side and as told to workers).
	byToken := map[int64]GrantRow{}
	byKey := map[string][]GrantRow{}
	for _, g := range grants {
		if prev, dup := byToken[g.Token]; dup {
			r.violate("token %d granted twice: %q to %q and %q to %q", g.Token, prev.Key, prev.Owner, g.Key, g.Owner)
		}
		byToken[g.Token] = g
		byKey[g.Key] = append(byKey[g.Key], g)
	}
	r.Checked["grants_committed"] = len(grants)
	told := map[int64]GrantRecord{}
	for _, g := range localGrants {
		if prev, dup := told[g.Token]; dup {
			r.violate("token %d handed to two workers: w%d (%q) and w%d (%q)", g.Token, prev.Worker, prev.Owner, g.Worker, g.Owner)
		}
		told[g.Token] = g
		if db, ok := byToken[g.Token]; !ok || db.Key != g.Key || db.Owner != g.Owner {
			r.violate("grant of token %d on %q to %q was reported to w%d but is not in the event log", g.Token, g.Key, g.Owner, g.Worker)
		}
	}
	r.Checked["grants_reported"] = len(localGrants)

	// Grants of a key commit in token order.
	for key, gs := range byKey {
		byCommit := append([]GrantRow(nil), gs...)
		sort.SliceStable(byCommit, func(i, j int) bool { return byCommit[i].CommittedAt.Before(byCommit[j].CommittedAt) })
		for i := 1; i < len(byCommit); i++ {
			if byCommit[i].Token <= byCommit[i-1].Token {
				r.violate("on %q, grant of token %d committed after grant of larger token %d", key, byCommit[i].Token, byCommit[i-1].Token)
			}
		}
	}

	r.checkWrites(writes, byKey)
	r.checkAttempts(writes, attempts)
	r.checkLeaseEnds(ends, grants)
	return r
}

// checkWrites: tokens non-decreasing in commit order per key, and every write
// inside its lease (after its grant, before the key's next grant).
func (r *Report) checkWrites(writes []WriteRow, byKey map[string][]GrantRow) {
	last := map[string]WriteRow{}
	for _, w := range writes {
		r.Checked["writes_committed"]++
		if prev, ok := last[w.Key]; ok && w.Token < prev.Token {
			r.violate("on %q, write %d (token %d) committed after write %d (token %d): tokens went backwards",
				w.Key, w.OpID, w.Token, prev.OpID, prev.Token)
		}
		last[w.Key] = w
		gs := byKey[w.Key] // sorted by token
		i := sort.Search(len(gs), func(i int) bool { return gs[i].Token >= w.Token })
		if i == len(gs) || gs[i].Token != w.Token {
			r.violate("on %q, write %d carries token %d, never granted on that key", w.Key, w.OpID, w.Token)
			continue
		}
		g := gs[i]
		if g.Owner != w.Owner {
			r.violate("on %q, write %d by %q carries token %d granted to %q", w.Key, w.OpID, w.Owner, w.Token, g.Owner)
		}
		if !w.CommittedAt.After(g.CommittedAt) {
			r.violate("on %q, write %d committed before its lease (token %d) was granted", w.Key, w.OpID, w.Token)
		}
		if i+1 < len(gs) && !w.CommittedAt.Before(gs[i+1].CommittedAt) {
			r.violate("on %q, write %d under token %d committed at %s, after token %d was granted at %s: overlapping leases",
				w.Key, w.OpID, w.Token, w.CommittedAt.Format(time.StampMicro), gs[i+1].Token, gs[i+1].CommittedAt.Format(time.StampMicro))
		}
	}
}

// checkAttempts: nothing told committed is missing, nothing told rolled back
// (or never attempted) is present.
func (r *Report) checkAttempts(writes []WriteRow, attempts []WriteRecord) {
	present := make(map[int64]bool, len(writes))
	for _, w := range writes {
		present[w.OpID] = true
	}
	told := make(map[int64]WriteRecord, len(attempts))
	for _, a := range attempts {
		told[a.OpID] = a
		switch a.Result {
		case Committed:
			r.Checked["writes_acknowledged"]++
			if !present[a.OpID] {
				r.violate("write %d on %q (token %d) was acknowledged as committed but is missing", a.OpID, a.Key, a.Token)
			}
		case RolledBack:
			r.Checked["writes_rolled_back"]++
			if present[a.OpID] {
				r.violate("write %d on %q (token %d) was rolled back but is in the table", a.OpID, a.Key, a.Token)
			}
		case Unknown:
			r.Checked["writes_unknown"]++
		}
	}
	for _, w := range writes {
		if _, ok := told[w.OpID]; !ok {
			r.violate("write %d on %q is in the table but no worker attempted it", w.OpID, w.Key)
		}
	}
}

// checkLeaseEnds: a lost lease's holder was told before its local deadline
// and before the database expiry it knew of, and every holder stopped
// believing before its lease was stolen.
func (r *Report) checkLeaseEnds(ends []LeaseEnd, grants []GrantRow) {
	endOf := map[int64]LeaseEnd{}
	for _, e := range ends {
		r.Checked["lease_ends"]++
		endOf[e.Token] = e
		if !e.Lost {
			continue
		}
		r.Checked["leases_lost"]++
		if e.OnArrival <= 0 {
			// Untrusted from the start: only the database expiry (below)
			// can be checked. Counted, and reported as a finding.
			r.Checked["leases_untrusted_on_arrival"]++
		} else if e.Remaining <= 0 {
			r.violate("w%d's keepalive of %q (token %d) cancelled at or after the lease's local deadline (%s; %s)",
				e.Worker, e.Key, e.Token, e.Cause, e.diagnosis())
		}
		if !e.At.Before(e.ExpiresAt) {
			r.violate("w%d's keepalive of %q (token %d) cancelled at %s, not before the expiry %s it knew of",
				e.Worker, e.Key, e.Token, e.At.Format(time.StampMicro), e.ExpiresAt.Format(time.StampMicro))
		}
	}
	for _, g := range grants {
		if g.Kind != lockview.EventStolen || g.PreviousToken == nil {
			continue
		}
		e, ok := endOf[*g.PreviousToken]
		if !ok {
			continue
		}
		r.Checked["steals_of_worker_leases"]++
		if !e.At.Before(g.OccurredAt) {
			r.violate("on %q, token %d was stolen (by token %d at %s) while w%d still trusted it (until %s)",
				g.Key, *g.PreviousToken, g.Token, g.OccurredAt.Format(time.StampMicro), e.Worker, e.At.Format(time.StampMicro))
		}
	}
}

// diagnosis says when the keepalive's last database call ran, relative to
// the moment the worker saw the cancellation, and how late timers fired.
func (e LeaseEnd) diagnosis() string {
	if e.CallStart.IsZero() {
		return "no keepalive call recorded"
	}
	end := "had not returned"
	if !e.CallEnd.IsZero() {
		end = fmt.Sprintf("returned %s before", e.At.Sub(e.CallEnd).Round(time.Millisecond))
	}
	return fmt.Sprintf("last keepalive call started %s before the cancellation and %s; worst timer delay in the second before: %s",
		e.At.Sub(e.CallStart).Round(time.Millisecond), end, e.SchedLag.Round(time.Millisecond))
}
