package store

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"

	"github.com/jackc/pgx/v5/pgconn"
)

// Errors a database error is mapped to, so callers (and users) see what it
// means rather than a SQLSTATE. The driver error stays wrapped for detail.
var (
	ErrNotMigrated      = errors.New("lock tables missing or not migrated: run `lockctl migrate` on this database (or grant this role USAGE on their schema)")
	ErrReadOnly         = errors.New("database is read-only (a standby or a read-only transaction): writes are refused")
	ErrPermissionDenied = errors.New("permission denied: this role lacks a grant lockctl needs (see docs/security.md, Least privilege)")
	ErrLockTimeout      = errors.New("timed out waiting for a database lock")
	ErrStatementTimeout = errors.New("statement cancelled (statement_timeout or cancel request)")
	ErrUnavailable      = errors.New("database unreachable")
	ErrInvalidValue     = errors.New("value rejected by the schema's checks")
	// ErrCannotAdopt: migrate found a distributed_lock it does not adopt
	// (the reference service's table without MigrateOptions.AdoptSeed, a
	// shape it does not know, or rows that break lockctl's rules) and
	// changed nothing. The driver error's message says which, naming rows.
	ErrCannotAdopt = errors.New("migrate refused: the existing distributed_lock table cannot be adopted as it is")
)

// meanings lists the errors above, most specific first.
var meanings = []error{
	ErrNotMigrated, ErrCannotAdopt, ErrSchemaNewer, ErrReadOnly, ErrPermissionDenied, ErrLockTimeout,
	ErrStatementTimeout, ErrUnavailable, ErrInvalidValue,
	ErrPoolerStatements, ErrPoolerStartupParameter,
}

// Meaning returns which of the errors above err is (through Interpret's
// wrapping), or nil: the sentence to show a user before the driver's detail.
func Meaning(err error) error {
	for _, m := range meanings {
		if errors.Is(err, m) {
			return m
		}
	}
	return nil
}

// Interpret maps a driver error to one of the errors above (wrapping both),
// and returns other errors unchanged. nil stays nil.
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
		return fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	return err
}

func bySQLState(code string) error {
	switch code {
	case "42P01", "42883", "42703": // undefined_table, undefined_function, undefined_column
		// A column lockctl's statements name is missing only on a table
		// that was not migrated: the reference service's, or an older one.
		return ErrNotMigrated
	case "LKA01": // raised by the adoption of the reference service's table (sql/adopt)
		return ErrCannotAdopt
	case newerSQLState: // raised by schema.sql on a schema a newer lockctl migrated
		return ErrSchemaNewer
	case "25006": // read_only_sql_transaction
		return ErrReadOnly
	case "42501": // insufficient_privilege
		return ErrPermissionDenied
	case "55P03": // lock_not_available
		return ErrLockTimeout
	case "57014": // query_canceled
		return ErrStatementTimeout
	case "23514", "22001", "22021": // check_violation, string too long, bad encoding
		return ErrInvalidValue
	case "57P01", "57P02", "57P03", "08000", "08003", "08006", "08001", "08004":
		// admin shutdown, crash shutdown, cannot connect now, connection failures
		return ErrUnavailable
	}
	return nil
}
