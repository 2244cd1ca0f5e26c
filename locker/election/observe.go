package election

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// Observe sends the key's leader on the channel each time it changes (a
// new term or a new value), the current one first, until ctx ends; then it
// closes the channel. It reads the leader after every proclamation's NOTIFY
// (with Config.Listen), and otherwise when the leader's lease would end
// and every Config.Recheck at most. Terms never go back on it. A reader
// that falls behind misses intermediate leaders, never the latest.
func (e *Election) Observe(ctx context.Context) <-chan Leader {
	out := make(chan Leader, 1)
	go e.observe(ctx, out)
	return out
}

func (e *Election) observe(ctx context.Context, out chan Leader) {
	defer close(out)
	var conn *pgx.Conn
	defer func() {
		if conn != nil {
			conn.Close(context.Background())
		}
	}()
	var last Leader
	for ctx.Err() == nil {
		if conn == nil && e.cfg.Listen != nil {
			conn = e.listen(ctx)
		}
		sleep := e.cfg.Recheck
		l, err := e.Leader(ctx)
		if err == nil {
			if l.Term > last.Term || (l.Term == last.Term && l.Value != last.Value) {
				last = l
				select {
				case out <- l:
				case <-out: // drop the unread older one
					out <- l
				}
			}
			// A leader that dies is followed at its lease's end at the
			// latest: read again then.
			sleep = min(sleep, max(l.Remaining, 0)+time.Millisecond)
		} else if !errors.Is(err, ErrNoLeader) && ctx.Err() == nil {
			sleep = min(sleep, time.Second)
		}
		if conn == nil {
			sleepCtx(ctx, sleep)
			continue
		}
		if !e.await(ctx, conn, sleep) {
			conn.Close(context.Background())
			conn = nil
		}
	}
}

// listen opens the LISTEN connection, or returns nil (Observe reads on its
// timer until the next try).
func (e *Election) listen(ctx context.Context) *pgx.Conn {
	conn, err := e.cfg.Listen(ctx)
	if err != nil {
		return nil
	}
	if _, err := conn.Exec(ctx, `LISTEN distributed_lock`); err != nil {
		conn.Close(context.Background())
		return nil
	}
	return conn
}

// await returns when a NOTIFY names the key or d passes, false when the
// connection failed.
func (e *Election) await(ctx context.Context, conn *pgx.Conn, d time.Duration) bool {
	wctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	for {
		n, err := conn.WaitForNotification(wctx)
		if err != nil {
			return ctx.Err() == nil && pgconn.Timeout(err) && !conn.IsClosed()
		}
		if n.Payload == e.key {
			return true
		}
	}
}

func sleepCtx(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}
