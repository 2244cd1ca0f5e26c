package store

import (
	"context"
	"errors"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// Errors of a connection pooler lockctl cannot work through as configured.
// Interpret maps the driver's errors to them; each says what to change.
var (
	ErrPoolerStatements       = errors.New("a connection pooler lost this connection's prepared statements (transaction pooling, e.g. PgBouncer before 1.21 or with max_prepared_statements = 0): add default_query_exec_mode=exec to the connection string (see docs/pooling.md)")
	ErrPoolerStartupParameter = errors.New("the connection pooler refuses a startup parameter of the connection string: drop it; to choose the lock schema, set the role's search_path with ALTER ROLE … SET search_path (see docs/pooling.md)")
)

// poolerError returns which of the errors above pgErr is, or nil.
//
// pgx's default mode names its cached statements stmtcache_…; behind a
// transaction pooler one client's statement is found on, or missing from,
// a server connection another client is using (42P05, 26000).
// describe_exec describes a statement in one round trip and binds it in the
// next, which a transaction pooler may run on another server connection,
// where another client's unnamed statement waits: the parameter counts
// then differ (08P01), or worse, match.
func poolerError(pgErr *pgconn.PgError) error {
	switch {
	case (pgErr.Code == "42P05" || pgErr.Code == "26000") && strings.Contains(pgErr.Message, `"stmtcache_`):
		return ErrPoolerStatements
	case pgErr.Code == "08P01" && strings.HasPrefix(pgErr.Message, "bind message supplies"):
		return ErrPoolerStatements
	case pgErr.Code == "08P01" && strings.HasPrefix(pgErr.Message, "unsupported startup parameter"):
		return ErrPoolerStartupParameter
	}
	return nil
}

// BehindPooler reports whether conn reaches PostgreSQL through a connection
// pooler. At start-up a server tells each connection its backend's pid (with
// the cancel key); PgBouncer, like other poolers, makes up a key of its own
// for each client, so that pid is not the pid of the backend that runs the
// connection's statements.
func BehindPooler(ctx context.Context, conn *pgx.Conn) (bool, error) {
	var pid uint32
	if err := conn.QueryRow(ctx, `SELECT pg_backend_pid()`, pgx.QueryExecModeSimpleProtocol).Scan(&pid); err != nil {
		return false, Interpret(err)
	}
	return pid != conn.PgConn().PID(), nil
}
