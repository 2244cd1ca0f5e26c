package pgtemp

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
)

// ErrNoBouncer means no pgbouncer binary was found. Its message says what to
// install.
var ErrNoBouncer = errors.New("pgtemp: no pgbouncer binary found (looked at $PGBOUNCER, PATH and /usr/sbin); install it, e.g. `apt-get install pgbouncer`, or set PGBOUNCER to its path")

// bouncerPaths are tried after PATH; Debian installs pgbouncer in /usr/sbin,
// which is not on an ordinary user's PATH. A variable so a test can empty it.
var bouncerPaths = []string{"/usr/sbin/pgbouncer", "/usr/local/sbin/pgbouncer"}

// FindBouncer returns the pgbouncer binary: $PGBOUNCER, PATH, then /usr/sbin.
func FindBouncer() (string, error) {
	if p := os.Getenv("PGBOUNCER"); p != "" {
		if !isFile(p) {
			return "", fmt.Errorf("pgtemp: PGBOUNCER=%s is not a program: %w", p, ErrNoBouncer)
		}
		return p, nil
	}
	if p, err := exec.LookPath("pgbouncer"); err == nil {
		return p, nil
	}
	for _, p := range bouncerPaths {
		if isFile(p) {
			return p, nil
		}
	}
	return "", ErrNoBouncer
}

// BouncerOptions configure StartBouncer. The zero value is a transaction
// pooler with PgBouncer's default sizes.
type BouncerOptions struct {
	// PoolMode is "transaction", "session" or "statement". Defaults to
	// "transaction", the mode services put in front of PostgreSQL.
	PoolMode string
	// PoolSize is default_pool_size: server connections per database and
	// user. Defaults to 20, PgBouncer's default.
	PoolSize int
	// MaxClientConn is max_client_conn. Defaults to 100, PgBouncer's default.
	MaxClientConn int
	// Users may log in besides "postgres". Authentication is trust (no
	// password), but PgBouncer only admits names in its auth_file; the roles
	// must exist on the upstream server.
	Users []string
	// Settings are extra [pgbouncer] ini settings, e.g. server_login_retry,
	// or ignore_startup_parameters (which defaults to extra_float_digits,
	// the parameter the JDBC driver sends). Settings the harness owns
	// (addresses, auth, logging) and the ones above are refused.
	Settings map[string]string
	// StartTimeout bounds waiting for a query to pass through. Defaults to 15s.
	StartTimeout time.Duration
}

// ownedSettings are set by StartBouncer itself; the value says which field
// to use instead, or why it is not configurable.
var ownedSettings = map[string]string{
	"pool_mode":         "use BouncerOptions.PoolMode",
	"default_pool_size": "use BouncerOptions.PoolSize",
	"max_client_conn":   "use BouncerOptions.MaxClientConn",
	"auth_type":         "tests use trust",
	"auth_file":         "use BouncerOptions.Users",
	"listen_addr":       "the harness listens on 127.0.0.1",
	"listen_port":       "the harness picks a free port",
	"unix_socket_dir":   "the harness listens on TCP only",
	"logfile":           "the log goes to LogPath",
	"pidfile":           "the harness tracks the process itself",
}

var (
	settingName = regexp.MustCompile(`^[a-z_]+$`)
	// userName excludes what the auth_file's quoting cannot carry.
	userName = regexp.MustCompile(`^[A-Za-z0-9_.-]+$`)
)

func (o *BouncerOptions) validate() error {
	switch o.PoolMode {
	case "":
		o.PoolMode = "transaction"
	case "transaction", "session", "statement":
	default:
		return fmt.Errorf("pgtemp: pool mode %q: want transaction, session or statement", o.PoolMode)
	}
	if o.PoolSize < 0 || o.MaxClientConn < 0 {
		return fmt.Errorf("pgtemp: pool size %d and max client connections %d must not be negative", o.PoolSize, o.MaxClientConn)
	}
	if o.PoolSize == 0 {
		o.PoolSize = 20
	}
	if o.MaxClientConn == 0 {
		o.MaxClientConn = 100
	}
	for _, u := range o.Users {
		if !userName.MatchString(u) {
			return fmt.Errorf("pgtemp: bouncer user %q: use letters, digits, '_', '.' and '-'", u)
		}
	}
	for k, v := range o.Settings {
		if why, ok := ownedSettings[k]; ok {
			return fmt.Errorf("pgtemp: bouncer setting %s: %s", k, why)
		}
		if !settingName.MatchString(k) || strings.ContainsAny(v, "\r\n") {
			return fmt.Errorf("pgtemp: bouncer setting %q = %q: want a lower-case name and a one-line value", k, v)
		}
	}
	if o.StartTimeout == 0 {
		o.StartTimeout = 15 * time.Second
	}
	return nil
}

// Bouncer is a running PgBouncer in front of one Instance.
type Bouncer struct {
	upstream *Instance
	opts     BouncerOptions
	dir      string // ini, auth file and log, inside the upstream's directory
	port     int

	mu   sync.Mutex
	cmd  *exec.Cmd
	done <-chan struct{} // closed when cmd has exited
}

// StartBouncer runs PgBouncer on a free loopback port in front of upstream,
// with its configuration in a directory of its own inside upstream's. Like
// the server, it runs as the server's account when the process is root (it
// refuses to run as root), dies with the process that started it, and is
// closed by Close or by upstream's Close.
func StartBouncer(ctx context.Context, upstream *Instance, opts BouncerOptions) (*Bouncer, error) {
	if err := opts.validate(); err != nil {
		return nil, err
	}
	if upstream == nil || upstream.port == 0 || upstream.dir == "" {
		return nil, errors.New("pgtemp: StartBouncer needs a started server")
	}
	bin, err := FindBouncer()
	if err != nil {
		return nil, err
	}
	b := &Bouncer{upstream: upstream, opts: opts}
	if b.dir, err = upstream.acct.mkdirIn(upstream.dir, "pgbouncer-"); err != nil {
		return nil, err
	}
	if b.port, err = FreePort(); err != nil {
		_ = os.RemoveAll(b.dir)
		return nil, err
	}
	if err := b.writeConfig(); err != nil {
		_ = os.RemoveAll(b.dir)
		return nil, err
	}
	upstream.mu.Lock()
	if upstream.bouncers == nil {
		upstream.bouncers = map[*Bouncer]bool{}
	}
	upstream.bouncers[b] = true
	upstream.mu.Unlock()
	if err := b.start(ctx, bin); err != nil {
		b.Close()
		return nil, err
	}
	return b, nil
}

func (b *Bouncer) iniPath() string      { return filepath.Join(b.dir, "pgbouncer.ini") }
func (b *Bouncer) authFilePath() string { return filepath.Join(b.dir, "userlist.txt") }

// LogPath is PgBouncer's log, worth reading when a test fails.
func (b *Bouncer) LogPath() string { return filepath.Join(b.dir, "pgbouncer.log") }

// Port is the port PgBouncer listens on (127.0.0.1).
func (b *Bouncer) Port() int { return b.port }

// Running reports whether the PgBouncer process is still running.
func (b *Bouncer) Running() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.done == nil {
		return false
	}
	select {
	case <-b.done:
		return false
	default:
		return true
	}
}

// DSN is a connection URL through the pooler to database db ("" means
// "postgres"). Database "pgbouncer" is PgBouncer's admin console (SHOW POOLS,
// SHOW SERVERS), open to "postgres". In transaction mode PgBouncer 1.18 hands
// server connections around between transactions, which pgx's default
// statement cache does not survive; a test picks its query exec mode.
func (b *Bouncer) DSN(db string) string { return dsnFor(b.port, db) }

func (b *Bouncer) writeConfig() error {
	settings := map[string]string{
		"ignore_startup_parameters": "extra_float_digits",
		"admin_users":               "postgres",
	}
	for k, v := range b.opts.Settings {
		settings[k] = v
	}
	settings["pool_mode"] = b.opts.PoolMode
	settings["default_pool_size"] = strconv.Itoa(b.opts.PoolSize)
	settings["max_client_conn"] = strconv.Itoa(b.opts.MaxClientConn)
	settings["auth_type"] = "trust"
	settings["auth_file"] = b.authFilePath()
	settings["listen_addr"] = "127.0.0.1"
	settings["listen_port"] = strconv.Itoa(b.port)
	settings["unix_socket_dir"] = ""
	names := make([]string, 0, len(settings))
	for k := range settings {
		names = append(names, k)
	}
	sort.Strings(names)

	var ini strings.Builder
	// The wildcard entry sends every database name to the upstream server.
	fmt.Fprintf(&ini, "[databases]\n* = host=127.0.0.1 port=%d\n\n[pgbouncer]\n", b.upstream.port)
	for _, k := range names {
		fmt.Fprintf(&ini, "%s = %s\n", k, settings[k])
	}
	var users strings.Builder
	for _, u := range append([]string{"postgres"}, b.opts.Users...) {
		fmt.Fprintf(&users, "%q \"\"\n", u)
	}
	if err := os.WriteFile(b.iniPath(), []byte(ini.String()), 0o644); err != nil {
		return fmt.Errorf("pgtemp: %w", err)
	}
	if err := os.WriteFile(b.authFilePath(), []byte(users.String()), 0o644); err != nil {
		return fmt.Errorf("pgtemp: %w", err)
	}
	return nil
}

func (b *Bouncer) start(ctx context.Context, bin string) error {
	cmd := exec.Command(bin, b.iniPath())
	cmd.Dir = b.dir
	cmd.SysProcAttr = b.upstream.acct.ProcAttr()
	// SIGTERM is PgBouncer's immediate shutdown; the kernel sends it if this
	// process dies without Close.
	cmd.SysProcAttr.Pdeathsig = syscall.SIGTERM
	done, err := startLogged(cmd, b.LogPath())
	if err != nil {
		return err
	}
	b.mu.Lock()
	b.cmd, b.done = cmd, done
	b.mu.Unlock()
	return b.waitReady(ctx, done)
}

// waitReady waits until a query passes through the pooler to the server.
func (b *Bouncer) waitReady(ctx context.Context, exited <-chan struct{}) error {
	var lastErr error
	err := pollUntil(ctx, b.opts.StartTimeout, exited, func(ctx context.Context) (bool, error) {
		conn, err := pgconn.Connect(ctx, b.DSN(""))
		if err != nil {
			lastErr = err
			return false, nil
		}
		_, lastErr = conn.Exec(ctx, "SELECT 1").ReadAll()
		_ = conn.Close(ctx)
		return lastErr == nil, nil
	})
	switch {
	case errors.Is(err, errExited):
		return fmt.Errorf("pgtemp: pgbouncer exited during start-up; log:\n%s", tail(b.LogPath()))
	case err != nil:
		return fmt.Errorf("pgtemp: no query passed through pgbouncer in %s (last error: %v); log:\n%s",
			b.opts.StartTimeout, lastErr, tail(b.LogPath()))
	}
	return nil
}

// Close stops PgBouncer (dropping its connections at once) and removes its
// directory. It is safe to call more than once.
func (b *Bouncer) Close() error {
	b.mu.Lock()
	if b.cmd != nil {
		stopGroup(b.cmd, b.done, syscall.SIGTERM, 10*time.Second)
		b.cmd, b.done = nil, nil
	}
	b.mu.Unlock()
	b.upstream.mu.Lock()
	delete(b.upstream.bouncers, b)
	b.upstream.mu.Unlock()
	_ = os.RemoveAll(b.dir)
	return nil
}

// closeBouncers closes the poolers still running in front of in, so closing
// a server never leaves one behind.
func (in *Instance) closeBouncers() {
	in.mu.Lock()
	list := make([]*Bouncer, 0, len(in.bouncers))
	for b := range in.bouncers {
		list = append(list, b)
	}
	in.mu.Unlock()
	for _, b := range list {
		_ = b.Close()
	}
}
