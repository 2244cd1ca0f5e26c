package cli

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"slices"
	"strings"
	"syscall"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/lockctl/lockctl/locker"
)

// ConnectError is a failed connection, told the way a person needs it: one
// line saying what failed and where (server, database, user; never the
// password), a hint at what to do, and the driver's own words after.
type ConnectError struct {
	Where   string // "127.0.0.1:5432, database app, user app"
	Problem string // "password authentication failed"
	Hint    string // "" when there is nothing useful to add
	Err     error  // the driver's error, for the details
}

// Error is the summary line; the driver's detail follows it, folded onto
// the same line (Env.Fail prints it on lines of its own).
func (e *ConnectError) Error() string {
	return e.Summary() + ": " + strings.Join(e.Details(), "; ")
}

// Summary is the readable first line.
func (e *ConnectError) Summary() string {
	return fmt.Sprintf("cannot connect to PostgreSQL at %s: %s", e.Where, e.Problem)
}

// Details is the driver's message, one line per part: pgconn joins the
// attempts at several addresses with "\n\t".
func (e *ConnectError) Details() []string {
	var out []string
	for _, line := range strings.Split(e.Err.Error(), "\n") {
		// pgconn tries TLS and then plain text, often failing both ways alike.
		if line = strings.TrimSpace(line); line != "" && !slices.Contains(out, line) {
			out = append(out, line)
		}
	}
	return out
}

func (e *ConnectError) Unwrap() error { return e.Err }

// pgEnvVars are the libpq variables pgx reads when the DSN leaves a setting out.
var pgEnvVars = []string{"PGHOST", "PGPORT", "PGDATABASE", "PGUSER", "PGPASSWORD", "PGPASSFILE",
	"PGSERVICE", "PGSERVICEFILE", "PGSSLMODE", "PGCONNECT_TIMEOUT", "PGAPPNAME", "PGTARGETSESSIONATTRS"}

// noDSNHint is the hint when neither --dsn nor $DATABASE_URL was given:
// the connection came from libpq's defaults, which is rarely what was meant.
func noDSNHint(getenv func(string) string) string {
	var set []string
	for _, v := range pgEnvVars {
		if getenv(v) != "" {
			set = append(set, v)
		}
	}
	if len(set) == 0 {
		return "no connection was given, so libpq's defaults were used: pass --dsn or --context, set $DATABASE_URL, " +
			"or set libpq's PG* variables (PGHOST, PGPORT, PGUSER, PGDATABASE, PGPASSWORD)"
	}
	return "no --dsn or $DATABASE_URL was given, so the connection came from " + strings.Join(set, ", ") +
		": check them, or pass --dsn"
}

// describeConnectError turns a failed connect or first ping into a
// ConnectError. dsnGiven says whether --dsn or $DATABASE_URL named the
// server; a timeout is reported as cfg.ConnectTimeout, which bounds both the
// connect and the ping. The result matches locker.ErrUnavailable when the
// server could not be reached.
func describeConnectError(cfg *pgx.ConnConfig, dsnGiven bool, err error) error {
	ce := &ConnectError{Where: describeTarget(cfg), Err: err}
	unreachable := false
	var pgErr *pgconn.PgError
	var dnsErr *net.DNSError
	switch {
	case errors.As(err, &pgErr):
		ce.Problem, ce.Hint, unreachable = describeServerRefusal(pgErr, cfg)
	case errors.As(err, &dnsErr):
		ce.Problem = fmt.Sprintf("database unreachable: host %q not found", dnsErr.Name)
		ce.Hint, unreachable = "check the host name", true
	case errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.ENOENT):
		ce.Problem = "database unreachable: no server is listening there"
		ce.Hint, unreachable = "is PostgreSQL running, on that host and port?", true
	case errors.Is(err, context.DeadlineExceeded), isTimeout(err):
		ce.Problem = fmt.Sprintf("database unreachable: no answer within %s", formatDuration(cfg.ConnectTimeout))
		ce.Hint, unreachable = "check the host and port, and any firewall in between (--dsn '...?connect_timeout=N' waits longer)", true
	default:
		ce.Problem = "database unreachable"
		unreachable = true
	}
	if !dsnGiven && (unreachable || pgErr != nil) {
		ce.Hint = noDSNHint(os.Getenv)
	}
	if unreachable {
		return fmt.Errorf("%w: %w", locker.ErrUnavailable, ce)
	}
	return ce
}

// describeServerRefusal explains an error the server sent while logging in.
func describeServerRefusal(e *pgconn.PgError, cfg *pgx.ConnConfig) (problem, hint string, unreachable bool) {
	switch e.Code {
	case "28P01": // invalid_password
		return fmt.Sprintf("password authentication failed for user %q", cfg.User),
			"check the password (in --dsn, $DATABASE_URL, PGPASSWORD or ~/.pgpass) and the user name", false
	case "28000": // invalid_authorization_specification: no pg_hba.conf entry, role missing
		return "the server refused this login: " + e.Message,
			"check the user name, and that the server's pg_hba.conf lets it connect from here", false
	case "3D000": // invalid_catalog_name
		return fmt.Sprintf("database %q does not exist", cfg.Database),
			"name an existing database in the DSN, or create it (createdb) and run `lockctl migrate`", false
	case "53300": // too_many_connections
		return "the server has no free connection slots: " + e.Message,
			"try again later, or raise max_connections", true
	case "08P01": // protocol_violation: PgBouncer refusing a startup parameter
		if strings.HasPrefix(e.Message, "unsupported startup parameter") {
			return "the connection pooler refused the connection string: " + e.Message,
				"drop that parameter from the DSN; to choose the lock schema behind a pooler, set the role's search_path with ALTER ROLE … SET search_path (docs/pooling.md)", false
		}
	case "57P03": // cannot_connect_now
		return "database unreachable: the server is starting up, shutting down or in recovery",
			"try again in a moment", true
	}
	return "the server refused the connection: " + e.Message, "", false
}

// describeTarget names the servers, database and user of cfg (never the
// password): "127.0.0.1:5432, database app, user app", every host of a
// multi-host DSN in the order tried ("db1:5432,db2:5432, database app, ...").
func describeTarget(cfg *pgx.ConnConfig) string {
	var where []string
	for _, a := range hostList(cfg) {
		if strings.HasPrefix(a.host, "/") {
			where = append(where, fmt.Sprintf("the socket %s/.s.PGSQL.%d", a.host, a.port))
		} else {
			where = append(where, a.String())
		}
	}
	db := cfg.Database
	if db == "" {
		db = cfg.User // the server's default
	}
	return fmt.Sprintf("%s, database %s, user %s", strings.Join(where, ","), db, cfg.User)
}

func isTimeout(err error) bool {
	var netErr net.Error
	return errors.As(err, &netErr) && netErr.Timeout()
}
