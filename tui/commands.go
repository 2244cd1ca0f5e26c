package tui

import (
	"context"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/lockctl/lockctl/internal/operator"
	"github.com/lockctl/lockctl/locker"
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

// poll asks the source for one snapshot. seq is the poll's number and
// querySeq the query generation it was asked under.
func poll(ctx context.Context, src Source, seq, querySeq int, req PollRequest) tea.Cmd {
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(ctx, pollTimeout)
		defer cancel()
		snap, err := src.Poll(ctx, req)
		return pageLoadedMsg{seq: seq, querySeq: querySeq, snap: snap, err: err}
	}
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
	// session is end-session's session (key says "session N").
	session int64
	// slot is the holder's slot when the action takes one holder's lease
	// of a shared or semaphore key (owner and token are the holder's).
	slot int32
}

// one is the lease of an action on one key.
func one(leases []locker.Lease, err error) (locker.Lease, error) {
	if err != nil {
		return locker.Lease{}, err
	}
	return leases[0], nil
}

// runAction performs one operator action through the locker (acquire,
// renew) or the operator (the rest): every action passes through it. done,
// when set, is called once the action has ended, whatever its outcome
// (Options.ActionDone).
func runAction(ctx context.Context, db *pgxpool.Pool, lk *locker.Locker, op operator.Operator, done func(), req actionRequest) tea.Cmd {
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(ctx, actionTimeout)
		defer cancel()
		if done != nil {
			defer done()
		}
		res := actionDoneMsg{seq: req.seq, kind: req.kind, key: req.key, token: req.token, session: req.session, slot: req.slot}
		switch req.kind {
		case actAcquire:
			res.lease, res.err = one(lk.Acquire(ctx, db, locker.Request{Keys: locker.Keys(req.key), Owner: req.owner, TTL: req.ttl}))
		case actRenew:
			res.lease, res.err = one(lk.Renew(ctx, db, locker.Lease{Key: req.key, Owner: req.owner, Token: req.token, TTL: req.ttl}))
		case actExpire:
			res.lease, res.err = op.ForceExpire(ctx, db, req.key, req.token)
		case actRelease:
			res.lease, res.err = op.ForceRelease(ctx, db, req.key, req.token)
		case actEndDelay:
			res.ended, res.err = op.EndDelay(ctx, db, req.key, "")
		case actRevoke:
			var r operator.Revoked
			r, res.err = op.Revoke(ctx, db, req.key, req.token, "", -1)
			res.lease = r.Lease
		case actEndSession:
			res.expired, res.err = op.EndSession(ctx, db, req.session, "")
		}
		return res
	}
}
