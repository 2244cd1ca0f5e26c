package tui

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

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
	if errors.Is(err, context.DeadlineExceeded) {
		return "no reply within the timeout (database slow or unreachable)"
	}
	meaning, cause := store.Meaning(err)
	if meaning == nil {
		return oneLine(err)
	}
	if cause == nil {
		return meaning.Error()
	}
	return meaning.Error() + " (" + oneLine(innermost(cause)) + ")"
}

// innermost is the root of a chain of wrapped errors (the last of a pair
// wrapped together), which is usually the useful part: "connection refused"
// of a dial error, the server's message of a database error.
func innermost(err error) error {
	for {
		switch u := err.(type) {
		case *pgconn.PgError:
			return errors.New(u.Message)
		case interface{ Unwrap() []error }:
			if errs := u.Unwrap(); len(errs) > 0 {
				err = errs[len(errs)-1]
				continue
			}
		case interface{ Unwrap() error }:
			if next := u.Unwrap(); next != nil {
				err = next
				continue
			}
		}
		return err
	}
}

// oneLine is err's text on one line, escaped: error text can quote
// database values.
func oneLine(err error) string {
	return safe(strings.ReplaceAll(err.Error(), "\n", " "))
}
