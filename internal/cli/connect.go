package cli

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/lockctl/lockctl/store"
)

// ConnectTimeout bounds connecting when the DSN sets no connect_timeout, so
// an unreachable server is reported in seconds rather than hanging.
const ConnectTimeout = 5 * time.Second

// ResolveDSN picks the connection string: the --dsn flag, else
// $DATABASE_URL, else "" (libpq's PG* variables, read by pgx).
func ResolveDSN(flag string, getenv func(string) string) string {
	if flag != "" {
		return flag
	}
	if getenv != nil {
		return getenv("DATABASE_URL")
	}
	return ""
}

// Connect opens a pool on dsn ("" reads libpq's PG* variables) and checks
// that the server answers, within ConnectTimeout unless the DSN sets
// connect_timeout. An unreachable server gives an error matching
// store.ErrUnavailable. Errors never contain the password.
func Connect(ctx context.Context, dsn string) (*pgxpool.Pool, error) {
	secrets := dsnPasswords(dsn)
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return nil, scrubbed(&usageError{fmt.Errorf("invalid connection string: %w", err)}, secrets)
	}
	secrets = append(secrets, cfg.ConnConfig.Password)
	if cfg.ConnConfig.ConnectTimeout == 0 {
		cfg.ConnConfig.ConnectTimeout = ConnectTimeout
	}
	if _, ok := cfg.ConnConfig.RuntimeParams["application_name"]; !ok {
		cfg.ConnConfig.RuntimeParams["application_name"] = "lockctl"
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, scrubbed(fmt.Errorf("connect to %s: %w", ServerName(cfg.ConnConfig), err), secrets)
	}
	pctx, cancel := context.WithTimeout(ctx, cfg.ConnConfig.ConnectTimeout)
	defer cancel()
	if err := pool.Ping(pctx); err != nil {
		pool.Close()
		err = store.Interpret(err)
		if !errors.Is(err, store.ErrUnavailable) && ctx.Err() == nil &&
			(errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled)) {
			err = fmt.Errorf("%w: no answer within %s: %w", store.ErrUnavailable, cfg.ConnConfig.ConnectTimeout, err)
		}
		return nil, scrubbed(fmt.Errorf("connect to %s: %w", ServerName(cfg.ConnConfig), err), secrets)
	}
	return pool, nil
}

// ServerName is how the console and messages name the server: host:port/db
// (the first host of a multi-host DSN; never the password).
func ServerName(cfg *pgx.ConnConfig) string {
	if cfg == nil {
		return ""
	}
	return cfg.Host + ":" + strconv.Itoa(int(cfg.Port)) + "/" + cfg.Database
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
