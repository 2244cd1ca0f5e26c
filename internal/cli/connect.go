package cli

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// ConnectTimeout bounds connecting when the DSN sets no connect_timeout, so
// an unreachable server is reported in seconds rather than hanging.
const ConnectTimeout = 5 * time.Second

// Open builds a pool on dsn ("" reads libpq's PG* variables) without
// connecting: the first query connects. The console opens its pool this way
// so it can start while the database is down and show itself reconnecting.
// Connecting is bounded by ConnectTimeout unless the DSN sets
// connect_timeout. Errors never contain the password.
func Open(ctx context.Context, dsn string) (*pgxpool.Pool, error) {
	pool, _, err := open(ctx, dsn)
	return pool, err
}

// open is Open, also returning the passwords later errors must not show.
func open(ctx context.Context, dsn string) (*pgxpool.Pool, []string, error) {
	secrets := dsnPasswords(dsn)
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return nil, nil, scrubbed(&usageError{fmt.Errorf("invalid connection string: %w", err)}, secrets)
	}
	secrets = append(secrets, cfg.ConnConfig.Password)
	if cfg.ConnConfig.ConnectTimeout == 0 {
		cfg.ConnConfig.ConnectTimeout = ConnectTimeout
	}
	if _, ok := cfg.ConnConfig.RuntimeParams["application_name"]; !ok {
		cfg.ConnConfig.RuntimeParams["application_name"] = "lockctl"
	}
	fitPooler(cfg, dsn)
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, nil, scrubbed(describeConnectError(cfg.ConnConfig, dsn != "", err), secrets)
	}
	return pool, secrets, nil
}

// Connect is Open, then checks that the server answers, within
// ConnectTimeout unless the DSN sets connect_timeout. A failure is a
// *ConnectError (what failed, where, a hint); an unreachable server's also
// matches locker.ErrUnavailable.
func Connect(ctx context.Context, dsn string) (*pgxpool.Pool, error) {
	pool, secrets, err := open(ctx, dsn)
	if err != nil {
		return nil, err
	}
	cfg := pool.Config()
	pctx, cancel := context.WithTimeout(ctx, cfg.ConnConfig.ConnectTimeout)
	defer cancel()
	if err := pool.Ping(pctx); err != nil {
		pool.Close()
		if ctx.Err() != nil { // interrupted: not the server's fault
			return nil, ctx.Err()
		}
		return nil, scrubbed(describeConnectError(cfg.ConnConfig, dsn != "", err), secrets)
	}
	return pool, nil
}

// CloseWithin closes pool but waits at most d for it. pgx cleans up a
// connection whose query was cut off (a timeout, a quit) by sending the
// server a cancel request, and pool.Close waits up to 15s for that: against
// a frozen or unreachable server, the whole 15s. A process about to exit
// does not need the cleanup: the kernel closes its sockets.
func CloseWithin(pool *pgxpool.Pool, d time.Duration) {
	closed := make(chan struct{})
	go func() {
		pool.Close()
		close(closed)
	}()
	select {
	case <-closed:
	case <-time.After(d):
	}
}

// ServerName is how the console and messages name the server: host:port/db,
// with every host of a multi-host DSN in order (host:port,host:port/db; never
// the password).
func ServerName(cfg *pgx.ConnConfig) string {
	if cfg == nil {
		return ""
	}
	var names []string
	for _, a := range hostList(cfg) {
		names = append(names, a.String())
	}
	return strings.Join(names, ",") + "/" + cfg.Database
}

// serverAddr is one server a connection may try.
type serverAddr struct {
	host string // a name, an address, or a Unix socket's directory
	port uint16
}

func (a serverAddr) String() string { return a.host + ":" + strconv.Itoa(int(a.port)) }

// hostList is every server cfg tries, in order: its host, then the other
// hosts of a multi-host DSN. pgx adds a fallback per TLS mode too
// (sslmode=prefer), so each server is listed once.
func hostList(cfg *pgx.ConnConfig) []serverAddr {
	hosts := []serverAddr{{host: cfg.Host, port: cfg.Port}}
	for _, f := range cfg.Fallbacks {
		if a := (serverAddr{host: f.Host, port: f.Port}); !slices.Contains(hosts, a) {
			hosts = append(hosts, a)
		}
	}
	return hosts
}

// scrubbedError hides passwords in a wrapped error's message while keeping
// errors.Is and errors.As working on it.
type scrubbedError struct {
	err     error
	secrets []string
}

func (e *scrubbedError) Error() string { return scrub(e.err.Error(), e.secrets) }
func (e *scrubbedError) Unwrap() error { return e.err }

func scrubbed(err error, secrets []string) error {
	return &scrubbedError{err: err, secrets: secrets}
}
