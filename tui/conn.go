package tui

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/lockctl/lockctl/locker"
	"github.com/lockctl/lockctl/store"
)

const (
	// slowAfter: a poll still unanswered after this shows as "slow".
	slowAfter = time.Second
	// slowLatency: a reply slower than this shows as "slow".
	slowLatency = 500 * time.Millisecond
	// maxBackoff caps the wait between polls while the database fails.
	maxBackoff = 5 * time.Second
)

// backoff is the wait before poll attempt n+1 after n consecutive failures.
func backoff(refresh time.Duration, failures int) time.Duration {
	d := refresh
	for i := 1; i < failures && d < maxBackoff; i++ {
		d *= 2
	}
	return min(d, max(maxBackoff, refresh))
}

// connectionProblem: the database could not be reached or did not answer
// in time (as opposed to answering with an error).
func connectionProblem(err error) bool {
	return errors.Is(err, locker.ErrUnavailable) || errors.Is(err, context.DeadlineExceeded)
}

// errHead is errMeaning without the driver's detail.
func errHead(err error) string {
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return "no reply in time"
	case errors.Is(err, locker.ErrUnavailable):
		return "database unreachable"
	case errors.Is(err, locker.ErrNotMigrated):
		return "lock tables missing"
	case errors.Is(err, locker.ErrPermissionDenied):
		return "permission denied"
	}
	return "query failed"
}

// errMeaning says what a failed poll or action means, in a few words, then
// the driver's detail (escaped: error text can quote database values).
func errMeaning(err error) string {
	if err == nil {
		return ""
	}
	var head string
	if errors.Is(err, context.DeadlineExceeded) {
		head = "no reply within the timeout (database slow or unreachable)"
	} else if m := store.Meaning(err); m != nil {
		head = m.Error()
	}
	detail := safe(strings.ReplaceAll(err.Error(), "\n", " "))
	if head == "" {
		return detail
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return head
	}
	return head + " (" + lastPart(detail) + ")"
}

// lastPart is the innermost cause of a wrapped error message: the part
// after the last ": ", which is usually the useful one ("connection refused").
func lastPart(s string) string {
	if i := strings.LastIndex(s, ": "); i >= 0 && i+2 < len(s) {
		return s[i+2:]
	}
	return s
}
