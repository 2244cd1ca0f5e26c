// Package pgtemp runs a private, throwaway PostgreSQL server in a temporary
// directory: the tests' database and the one `lockctl demo` opens.
//
// A server is started with Start and removed with Close, which stops it and
// deletes its directory. Three things keep an interrupted run from leaving a
// server behind: the postmaster gets SIGQUIT from the kernel when the process
// that started it dies (Pdeathsig), Options.HandleSignals makes SIGINT and
// SIGTERM close every running server before the process exits, and Start
// removes directories that earlier, killed runs left behind.
//
// initdb refuses to run as root, so as root the server runs as the
// "postgres" user (Options.User) in a directory that user can reach.
//
// Around a server, for tests of the setups services run in:
//
//   - StartBouncer puts Debian's PgBouncer (`apt-get install pgbouncer`) in
//     front of a server on a free loopback port, in transaction or session
//     mode with a given pool size; Bouncer.DSN connects through it. Its ini
//     and auth file live in a directory inside the server's; authentication
//     is trust for "postgres" and BouncerOptions.Users (PgBouncer admits only
//     names in its auth file). Like the server it runs as the server's
//     account, dies with the process (Pdeathsig), and Bouncer.Close or the
//     server's Close stops it.
//   - StartStandby makes a streaming standby of a server. SetSynchronous
//     makes the primary wait for it; PauseWALSender/ResumeWALSender stop and
//     continue the primary's WAL sender for it, so commits can be made that
//     it never receives; Crash is an immediate stop; Promote makes the
//     standby a primary. IsPrimary and Timeline say what a server is now,
//     and MultiHostDSN lists servers for clients that must follow the
//     primary (target_session_attrs=read-write).
//   - JDBCJar and FindJava find the PostgreSQL JDBC driver
//     (libpostgresql-jdbc-java) and a JDK, for tests of Java clients.
//
// Each missing program is its own error (ErrNoServer, ErrNoBouncer,
// ErrNoJDBC, ErrNoJava) saying what to install, so a test can skip, or fail
// under CI=true.
package pgtemp

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
)

// dirPrefix names every directory pgtemp makes, so stale ones can be found.
const dirPrefix = "lockctl-pgtemp-"

// Options configure Start. The zero value is a durable server with
// PostgreSQL's defaults.
type Options struct {
	// Fast turns off fsync and full-page writes: safe against a server
	// crash (the WAL still reaches the OS), unsafe against a machine crash,
	// which a throwaway cluster does not care about. Commits stay
	// synchronous, so a "committed" reply still means committed.
	Fast bool
	// Settings are extra `-c name=value` server settings.
	Settings map[string]string
	// User runs the server when the process is root. Defaults to "postgres".
	User string
	// HandleSignals closes every running server on SIGINT or SIGTERM and then
	// lets the signal end the process as it would have. For tests; a program
	// with its own shutdown (the console) leaves it off and calls Close.
	HandleSignals bool
	// StartTimeout bounds waiting for the server to accept connections.
	// Defaults to 30s.
	StartTimeout time.Duration
}

// Instance is one running (or stopped) throwaway server.
type Instance struct {
	opts   Options
	binDir string
	dir    string // temp dir: data/, the socket and the log
	port   int
	acct   Account // who runs the server and its poolers

	mu   sync.Mutex
	cmd  *exec.Cmd
	done <-chan struct{} // closed when cmd has exited

	// Replication (replication.go), guarded by mu.
	upstream *Instance      // the server this standby streams from; nil on a primary and after Promote
	appName  string         // this standby's application_name on its upstream
	paused   map[string]int // on a primary: standby application_name → its stopped walsender's pid

	// Poolers in front of this server (bouncer.go), guarded by mu; Close
	// closes them first.
	bouncers map[*Bouncer]bool
}

// StopMode is how Stop shuts the server down (see pg_ctl -m).
type StopMode int

const (
	// Fast disconnects clients and shuts down cleanly (SIGINT).
	Fast StopMode = iota
	// Immediate aborts without a checkpoint, as a crash would (SIGQUIT);
	// the next start runs crash recovery.
	Immediate
)

// Start initialises a cluster in a new temporary directory and starts it.
func Start(ctx context.Context, opts Options) (*Instance, error) {
	if opts.User == "" {
		opts.User = "postgres"
	}
	if opts.StartTimeout == 0 {
		opts.StartTimeout = 30 * time.Second
	}
	binDir, err := FindBinDir()
	if err != nil {
		return nil, err
	}
	in := &Instance{opts: opts, binDir: binDir}
	if in.acct, err = AccountFor(opts.User); err != nil {
		return nil, err
	}
	base := reachableTempBase()
	removeStale(base)
	if in.dir, err = in.acct.mkdirIn(base, dirPrefix+strconv.Itoa(os.Getpid())+"-"); err != nil {
		return nil, err
	}
	register(in, opts.HandleSignals)
	if err := in.initdb(ctx); err != nil {
		in.Close()
		return nil, err
	}
	if err := in.Start(ctx); err != nil {
		in.Close()
		return nil, err
	}
	return in, nil
}

func (in *Instance) command(ctx context.Context, name string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, filepath.Join(in.binDir, name), args...)
	cmd.Dir = in.dir
	cmd.Env = append(os.Environ(), "LC_ALL=C")
	cmd.SysProcAttr = in.acct.ProcAttr()
	return cmd
}

func (in *Instance) initdb(ctx context.Context) error {
	cmd := in.command(ctx, "initdb", "-D", in.dataDir(), "-U", "postgres",
		"--auth=trust", "--encoding=UTF8", "--locale=C", "--no-sync")
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("pgtemp: initdb: %w\n%s", err, out)
	}
	return nil
}

func (in *Instance) dataDir() string { return filepath.Join(in.dir, "data") }

// LogPath is the server's log file, worth reading when a test fails.
func (in *Instance) LogPath() string { return filepath.Join(in.dir, "postgres.log") }

// Dir is the instance's temporary directory; Close removes it.
func (in *Instance) Dir() string { return in.dir }

// DSN is a connection URL for database db ("" means "postgres").
func (in *Instance) DSN(db string) string { return dsnFor(in.port, db) }

// dsnFor is a connection URL as "postgres" to database db ("" means
// "postgres") on 127.0.0.1:port, where a server or a pooler listens.
func dsnFor(port int, db string) string {
	if db == "" {
		db = "postgres"
	}
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/%s?sslmode=disable", port, db)
}

// Port is the server's TCP port on 127.0.0.1; it stays the same across
// restarts.
func (in *Instance) Port() int { return in.port }

// Start starts the server again after Stop (Start the function starts it the
// first time). It keeps the port, so DSNs stay valid across restarts.
func (in *Instance) Start(ctx context.Context) error {
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.cmd != nil {
		return errors.New("pgtemp: already running")
	}
	if in.port == 0 {
		port, err := FreePort()
		if err != nil {
			return err
		}
		in.port = port
	}
	args := []string{"-D", in.dataDir(), "-p", strconv.Itoa(in.port), "-k", in.dir,
		"-c", "listen_addresses=127.0.0.1", "-c", "logging_collector=off"}
	if in.opts.Fast {
		args = append(args, "-c", "fsync=off", "-c", "full_page_writes=off")
	}
	for k, v := range in.opts.Settings {
		args = append(args, "-c", k+"="+v)
	}
	cmd := in.command(context.Background(), "postgres", args...)
	// If this process dies without Close, the kernel tells the postmaster to
	// shut down at once instead of leaving it running forever.
	cmd.SysProcAttr.Pdeathsig = syscall.SIGQUIT
	done, err := startLogged(cmd, in.LogPath())
	if err != nil {
		return err
	}
	in.cmd, in.done = cmd, done
	if err := in.waitReady(ctx, done); err != nil {
		in.stopLocked(Immediate)
		return err
	}
	return nil
}

func (in *Instance) waitReady(ctx context.Context, exited <-chan struct{}) error {
	err := pollUntil(ctx, in.opts.StartTimeout, exited, func(ctx context.Context) (bool, error) {
		conn, err := pgx.Connect(ctx, in.DSN(""))
		if err != nil {
			return false, nil // not accepting connections yet
		}
		_ = conn.Close(ctx)
		return true, nil
	})
	switch {
	case errors.Is(err, errExited):
		return fmt.Errorf("pgtemp: postgres exited during start-up; log:\n%s", in.logTail())
	case err != nil:
		return fmt.Errorf("pgtemp: postgres did not accept connections in %s; log:\n%s", in.opts.StartTimeout, in.logTail())
	}
	return nil
}

func (in *Instance) logTail() string { return tail(in.LogPath()) }

// tail is the end of a log file, for error messages.
func tail(path string) string {
	b, _ := os.ReadFile(path)
	if len(b) > 4000 {
		b = b[len(b)-4000:]
	}
	return string(b)
}

// Stop shuts the server down and waits for it to exit. The data stays, so
// Start brings the same cluster back (after crash recovery for Immediate).
func (in *Instance) Stop(mode StopMode) error {
	in.mu.Lock()
	defer in.mu.Unlock()
	return in.stopLocked(mode)
}

func (in *Instance) stopLocked(mode StopMode) error {
	if in.cmd == nil {
		return nil
	}
	sig := syscall.SIGINT
	if mode == Immediate {
		sig = syscall.SIGQUIT
	}
	in.releasePausedSenders(mode)
	// After the grace, the kill reaches the postmaster and any backend it
	// left.
	stopGroup(in.cmd, in.done, sig, 15*time.Second)
	in.cmd, in.done = nil, nil
	return nil
}

// Restart is Stop followed by Start, like `pg_ctl restart -m MODE`.
func (in *Instance) Restart(ctx context.Context, mode StopMode) error {
	if err := in.Stop(mode); err != nil {
		return err
	}
	return in.Start(ctx)
}

// Close stops the server and removes its directory. It is safe to call more
// than once.
func (in *Instance) Close() error {
	in.closeBouncers()
	err := in.Stop(Fast)
	unregister(in)
	in.removeDir()
	return err
}

func (in *Instance) removeDir() {
	if in.dir != "" {
		_ = os.RemoveAll(in.dir)
	}
}

// FreePort is a TCP port on 127.0.0.1 that nothing listens on now, for a
// server or a program beside it.
func FreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("pgtemp: find a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// removeStale deletes directories of earlier runs whose process is gone and
// whose server (if any) is no longer running.
func removeStale(base string) {
	dirs, _ := filepath.Glob(filepath.Join(base, dirPrefix+"*"))
	for _, dir := range dirs {
		rest := strings.TrimPrefix(filepath.Base(dir), dirPrefix)
		pid, err := strconv.Atoi(strings.SplitN(rest, "-", 2)[0])
		if err != nil || processAlive(pid) || postmasterAlive(dir) {
			continue
		}
		_ = os.RemoveAll(dir)
	}
}

func processAlive(pid int) bool {
	return pid > 0 && syscall.Kill(pid, 0) == nil
}

func postmasterAlive(dir string) bool {
	b, err := os.ReadFile(filepath.Join(dir, "data", "postmaster.pid"))
	if err != nil {
		return false
	}
	pid, _ := strconv.Atoi(strings.SplitN(string(b), "\n", 2)[0])
	return processAlive(pid)
}
