package store

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/lockctl/lockctl/internal/lockdb"
)

// Meaning returns which of the errors of internal/lockdb (locker's ErrX
// names) err is, or nil: the sentence to show a user before the detail. cause
// is the error wrapped beside it, as Interpret wraps them
// (fmt.Errorf("%w: %w", meaning, cause)): the driver's detail, without the
// meaning or the context around it. It is nil when the meaning was wrapped
// otherwise (or stands alone).
func Meaning(err error) (meaning, cause error) {
	for _, m := range lockdb.Meanings {
		if errors.Is(err, m) {
			return m, causeBeside(err, m)
		}
	}
	return nil, nil
}

// causeBeside finds, in err's tree, the error wrapped together with meaning
// as the second of a pair.
func causeBeside(err, meaning error) error {
	switch u := err.(type) {
	case interface{ Unwrap() []error }:
		errs := u.Unwrap()
		if len(errs) == 2 && errs[0] == meaning {
			return errs[1]
		}
		for _, e := range errs {
			if c := causeBeside(e, meaning); c != nil {
				return c
			}
		}
	case interface{ Unwrap() error }:
		return causeBeside(u.Unwrap(), meaning)
	}
	return nil
}

// Interpret maps a driver error to one of the errors of internal/lockdb
// (wrapping both), and returns other errors unchanged. nil stays nil.
func Interpret(err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		if mapped := poolerError(pgErr); mapped != nil {
			return fmt.Errorf("%w: %w", mapped, err)
		}
		if mapped := bySQLState(pgErr.Code); mapped != nil {
			return fmt.Errorf("%w: %w", mapped, err)
		}
		return err
	}
	var connErr *pgconn.ConnectError
	var netErr net.Error
	// A server that dies mid-statement shows up as a bare EOF on the socket,
	// and the next use of that connection as ErrConnClosed.
	lostConn := errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) || errors.Is(err, pgconn.ErrConnClosed)
	if lostConn || errors.As(err, &connErr) || errors.As(err, &netErr) || pgconn.SafeToRetry(err) {
		return fmt.Errorf("%w: %w", lockdb.ErrUnavailable, err)
	}
	return err
}

func bySQLState(code string) error {
	switch code {
	case "42P01", "42883", "42703": // undefined_table, undefined_function, undefined_column
		// A column lockctl's statements name is missing only on a table
		// that was not migrated: the reference service's, or an older one.
		return lockdb.ErrNotMigrated
	case "LKA01": // raised by the adoption of the reference service's table (sql/adopt)
		return lockdb.ErrCannotAdopt
	case newerSQLState: // raised by schema.sql on a schema a newer lockctl migrated
		return lockdb.ErrSchemaNewer
	case "LKA03": // raised by the lock schema's guard (sql/guard)
		return lockdb.ErrSchemaOpen
	case unknownSQLState: // raised by the migrations' checksum guard (migrate_checksum.go)
		return lockdb.ErrSchemaUnknown
	case "25006": // read_only_sql_transaction
		return lockdb.ErrReadOnly
	case "42501": // insufficient_privilege
		return lockdb.ErrPermissionDenied
	case "55P03": // lock_not_available
		return lockdb.ErrLockTimeout
	case "57014": // query_canceled
		return lockdb.ErrStatementTimeout
	case "23514", "22001", "22021": // check_violation, string too long, bad encoding
		return lockdb.ErrInvalidValue
	case "57P01", "57P02", "57P03", "08000", "08003", "08006", "08001", "08004":
		// admin shutdown, crash shutdown, cannot connect now, connection failures
		return lockdb.ErrUnavailable
	}
	return nil
}
