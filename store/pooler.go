package store

import (
	"context"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/lockctl/lockctl/internal/lockdb"
)

// poolerError returns which error of a connection pooler lockctl cannot work
// through as configured pgErr is (lockdb.ErrPoolerStatements or
// lockdb.ErrPoolerStartupParameter), or nil.
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
		return lockdb.ErrPoolerStatements
	case pgErr.Code == "08P01" && strings.HasPrefix(pgErr.Message, "bind message supplies"):
		return lockdb.ErrPoolerStatements
	case pgErr.Code == "08P01" && strings.HasPrefix(pgErr.Message, "unsupported startup parameter"):
		return lockdb.ErrPoolerStartupParameter
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
