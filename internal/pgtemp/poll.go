package pgtemp

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// pollEvery is how often pollUntil checks: short beside a server's start-up
// or a standby's catching up, and each check is one cheap query or connect.
const pollEvery = 20 * time.Millisecond

// errExited is pollUntil's answer when the process it watches has exited.
var errExited = errors.New("pgtemp: the process exited")

// pollUntil runs check now and then every pollEvery until it reports done,
// or returns an error (which pollUntil returns as it is). It gives up with
// ctx's error when ctx ends or timeout passes (0: no bound but ctx's), and
// with errExited when exited closes (nil: never), so a wait for a process
// to come up ends as soon as the process dies.
func pollUntil(ctx context.Context, timeout time.Duration, exited <-chan struct{}, check func(context.Context) (bool, error)) error {
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	for {
		done, err := check(ctx)
		if err != nil {
			return err
		}
		if done {
			return nil
		}
		select {
		case <-exited:
			return errExited
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(pollEvery):
		}
	}
}

// poll waits up to replicationWait for check to report done, for the
// replication calls; its errors say what was waited for.
func poll(ctx context.Context, what string, check func(context.Context) (bool, error)) error {
	if err := pollUntil(ctx, replicationWait, nil, check); err != nil {
		return fmt.Errorf("pgtemp: waiting for %s: %w", what, err)
	}
	return nil
}
