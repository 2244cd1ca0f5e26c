package serve

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/lockctl/lockctl/internal/lockdb"
	"github.com/lockctl/lockctl/internal/lockview"
	"github.com/lockctl/lockctl/internal/sshtest"
	"github.com/lockctl/lockctl/internal/testdb"
	"github.com/lockctl/lockctl/internal/tmuxtest"
	"github.com/lockctl/lockctl/locker"
	"github.com/lockctl/lockctl/store"
)

const within = 15 * time.Second

// served is `lockctl serve` running as a process, with keys for an
// operator (alice), a viewer (bob) and a stranger.
type served struct {
	t                          *testing.T
	dir, port                  string
	operator, viewer, stranger sshtest.Key
	cmd                        *exec.Cmd
	log                        *lockedBuffer
	exited                     chan error
}

func startServe(t *testing.T, dsn string, extra ...string) *served {
	t.Helper()
	return startServeIn(t, nil, append([]string{"--dsn", dsn}, extra...)...)
}

// startServeIn starts serve with env added to this process's environment
// and args after its own.
func startServeIn(t *testing.T, env []string, args ...string) *served {
	t.Helper()
	dir := t.TempDir()
	s := &served{t: t, dir: dir, log: &lockedBuffer{}, exited: make(chan error, 1)}
	s.operator = sshtest.NewKey(t, dir, "operator")
	s.viewer = sshtest.NewKey(t, dir, "viewer")
	s.stranger = sshtest.NewKey(t, dir, "stranger")
	keys := filepath.Join(dir, "authorized_keys")
	sshtest.WriteFile(t, keys, fmt.Sprintf("role=\"operator\",actor=\"alice\" %s\nrole=\"viewer\",actor=\"bob\" %s\n",
		s.operator.Pub, s.viewer.Pub))
	s.port = freePort(t)
	args = append([]string{"serve", "--ssh", "127.0.0.1:" + s.port,
		"--host-key", filepath.Join(dir, "host", "ssh_host_ed25519_key"), "--authorized-keys", keys,
		"--refresh", "200ms"}, args...)
	s.cmd = exec.Command(lockctlBinary(t), args...)
	s.cmd.Env = append(os.Environ(), env...)
	s.cmd.Stdout, s.cmd.Stderr = s.log, s.log
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { s.exited <- s.cmd.Wait() }()
	t.Cleanup(func() {
		_ = s.cmd.Process.Kill()
		<-s.exited
	})
	testdb.Eventually(t, within, "the server to listen", func() bool {
		return strings.Contains(s.log.String(), "serving the console over SSH")
	})
	return s
}

// freePort is a TCP port nothing listens on now.
func freePort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	return port
}

func (s *served) args(key sshtest.Key, extra ...string) []string {
	return sshtest.Args(s.port, filepath.Join(s.dir, "known_hosts"), key, extra...)
}

// pane is an ssh client for key in a 120x35 tmux pane.
func (s *served) pane(key sshtest.Key) *tmuxtest.Pane {
	return tmuxtest.Start(s.t, 120, 35, nil, s.args(key)...)
}

// TestServeOverSSH: an operator watches and acts, and the event carries
// its actor and the server's database role; a viewer watches, and every action key it sends changes
// nothing in the database; a stranger's key and a session without a PTY
// are refused; SIGTERM quits both consoles (terminals restored, clients
// exit 0) and the server exits 0.
func TestServeOverSSH(t *testing.T) {
	ctx := context.Background()
	dsn := testdb.DSN(t)
	db := testdb.Pool(t, dsn)
	lk := testdb.Locker(t, locker.Config{TTL: time.Minute})
	testdb.MustAcquire(t, lk, db, "ssh:acted", "worker-1")
	testdb.MustAcquire(t, lk, db, "ssh:watched", "worker-2")
	s := startServe(t, dsn)

	op := s.pane(s.operator)
	op.WaitFor("over SSH as alice (operator)", within)
	op.WaitFor("ssh:watched", within)
	op.Keys("/", "ssh:acted", "Enter")
	op.WaitFor("row 1 of 1", within)
	op.Keys("x")
	op.WaitFor("Force-expire this lock?", within)
	op.Keys("y")
	op.WaitFor("✓ force-expired ssh:acted", within)
	// The event names the key's actor as its claim, and beside it the
	// database role the server connects as, which no key can choose.
	var serverRole string
	if err := db.QueryRow(ctx, "SELECT session_user").Scan(&serverRole); err != nil {
		t.Fatal(err)
	}
	evs, err := lockview.KeyEvents(ctx, db, "ssh:acted", 1)
	if err != nil || len(evs) != 1 || evs[0].Kind != lockdb.EventForceExpired || evs[0].Actor != "alice" ||
		evs[0].Role != serverRole {
		t.Fatalf("last event of ssh:acted: %+v, %v; want force_expired by alice as role %s", evs, err, serverRole)
	}

	view := s.pane(s.viewer)
	view.WaitFor("over SSH as bob (viewer)", within)
	screen := view.WaitFor("ssh:watched", within)
	if strings.Contains(screen, "x expire") || strings.Contains(screen, "d release") {
		t.Errorf("the viewer's help offers actions:\n%s", screen)
	}
	before := databaseState(t, db)
	view.Keys("/", "ssh:watched", "Enter")
	view.WaitFor("row 1 of 1", within)
	// Every action key, each followed by what would confirm it, on the
	// table and in the detail pane.
	actions := []string{"x", "y", "d", "y", "r", "a", "y"}
	view.Keys(actions...)
	view.Keys("Enter")
	view.WaitFor("Lock ssh:watched", within)
	view.Keys(actions...)
	// Esc alone, then the table: an Esc followed at once by another key
	// reads as alt+key.
	view.Keys("Escape")
	view.WaitUntil("the table", within, func(s string) bool { return !strings.Contains(s, "Lock ssh:watched") })
	// Help opens after the keys above were handled, in order.
	view.Keys("?")
	view.WaitFor("Read-only console", within)
	if after := databaseState(t, db); after != before {
		t.Fatalf("the viewer's keys changed the database:\nbefore %s\nafter  %s", before, after)
	}

	out, code := sshtest.Run(t, s.args(s.stranger, "-tt"))
	if code != 255 || !strings.Contains(out, "Permission denied (publickey)") {
		t.Errorf("stranger: exit %d, %q; want 255, Permission denied (publickey)", code, out)
	}
	out, code = sshtest.Run(t, s.args(s.operator, "-T"))
	if code != 1 || !strings.Contains(out, "Requires an active PTY") {
		t.Errorf("no PTY: exit %d, %q; want 1 and a message", code, out)
	}

	if err := s.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-s.exited:
		s.exited <- err
		if err != nil {
			t.Fatalf("serve after SIGTERM: %v\n%s", err, s.log)
		}
	case <-time.After(within):
		t.Fatalf("serve still running after SIGTERM:\n%s", s.log)
	}
	for _, p := range []*tmuxtest.Pane{op, view} {
		screen := p.WaitFor("exit status 0", within)
		if strings.Contains(screen, "over SSH as") {
			t.Errorf("console screen left behind after the shutdown:\n%s", screen)
		}
	}
	log := s.log.String()
	for _, want := range []string{`msg="session opened" actor=alice role=operator`, `msg="session opened" actor=bob role=viewer`,
		`reason="server shutdown"`, `msg="key refused"`} {
		if !strings.Contains(log, want) {
			t.Errorf("server log lacks %q:\n%s", want, log)
		}
	}
}

// databaseState is every lock row and the number of events, as text.
func databaseState(t *testing.T, db *pgxpool.Pool) string {
	t.Helper()
	ctx := context.Background()
	var b strings.Builder
	for _, key := range []string{"ssh:acted", "ssh:watched", "ssh:new"} {
		l, found, err := store.Get[lockdb.LockInfo](ctx, db, key)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&b, "%s found=%v owner=%s token=%d expires=%s; ", key, found, l.Owner, l.Token, l.ExpiresAt)
	}
	var events int
	if err := db.QueryRow(ctx, "SELECT count(*) FROM distributed_lock_event").Scan(&events); err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(&b, "events=%d", events)
	return b.String()
}

// lockedBuffer collects the server's output.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
