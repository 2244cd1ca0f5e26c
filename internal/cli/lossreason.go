package cli

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/lockctl/lockctl/internal/lockdb"
	"github.com/lockctl/lockctl/internal/lockview"
	"github.com/lockctl/lockctl/locker"
)

// leaseLossReason says why a kept lease was lost, for run's message: who
// ended it, when the event log says (an operator's force action, or the
// owner that took it over), else the Keepalive's own reason.
func leaseLossReason(ctx context.Context, db locker.DBTX, lease locker.Lease, cause error) string {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	events, err := lockview.KeyEvents(ctx, db, lease.Key, 10)
	if err == nil {
		for _, e := range events {
			switch {
			case e.Kind == lockdb.EventForceExpired && e.Token != nil && *e.Token == lease.Token:
				return "force-expired by " + e.Actor + reasonOf(e)
			case e.Kind == lockdb.EventForceReleased && e.Token != nil && *e.Token == lease.Token:
				return "force-released by " + e.Actor + reasonOf(e)
			case e.Kind == lockdb.EventStolen && e.PreviousToken != nil && *e.PreviousToken == lease.Token:
				return fmt.Sprintf("taken over by %s (token %s)", orDash(e.Owner), tokenText(e.Token))
			}
		}
	}
	var lost *locker.Error
	if errors.As(cause, &lost) {
		return lost.Reason
	}
	return cause.Error()
}

// reasonOf is " (why)" when the operator's event says why (an ended
// session's says which session, unless the operator gave a reason), "".
func reasonOf(e lockview.Event) string {
	if r, ok := e.Detail["reason"].(string); ok && r != "" {
		return " (" + r + ")"
	}
	return ""
}
