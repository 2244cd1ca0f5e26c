package patroni_test

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/lockctl/lockctl/internal/lockview"
	"github.com/lockctl/lockctl/tui"
)

// console polls as the console does (tui.NewPoolSource, a window of the
// locks page), keeping what its last good poll said: Snapshot.Server is
// the server the header names ("on 127.0.0.1:port").
type console struct {
	mu   sync.Mutex
	last consoleRead
}

type consoleRead struct {
	sent       time.Time // when the poll was sent
	server     string
	inRecovery bool
	err        error // the last poll's, if it failed
}

const consoleRefresh = 300 * time.Millisecond

func watch(ctx context.Context, src tui.Source) *console {
	c := &console{}
	req := tui.PollRequest{Query: lockview.ListQuery{Sort: lockview.SortKey, After: 20}, Shape: true}
	go func() {
		for ctx.Err() == nil {
			sent := time.Now()
			pctx, cancel := context.WithTimeout(ctx, callTimeout)
			snap, err := src.Poll(pctx, req)
			cancel()
			c.mu.Lock()
			if err == nil {
				c.last = consoleRead{sent: sent, server: snap.Server, inRecovery: snap.Page.InRecovery}
			} else {
				c.last.err = err
			}
			c.mu.Unlock()
			select {
			case <-ctx.Done():
			case <-time.After(consoleRefresh):
			}
		}
	}()
	return c
}

// namedSince says whether the last good poll sent after t read from
// server, a primary.
func (c *console) namedSince(t time.Time, server string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.last.sent.After(t) && c.last.server == server && !c.last.inRecovery
}

// describe says what the last good poll read and how the last one
// failed, for failures.
func (c *console) describe() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return fmt.Sprintf("%q (in recovery: %v, %s ago; last error: %v)",
		c.last.server, c.last.inRecovery, time.Since(c.last.sent).Round(time.Millisecond), c.last.err)
}
