package sshserve

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	tea "charm.land/bubbletea/v2"

	"github.com/lockctl/lockctl/internal/testdb"
	"github.com/lockctl/lockctl/internal/tmuxtest"
)

// keyPair is a client key made by ssh-keygen: the private key file and the
// public key's authorized_keys text.
type keyPair struct {
	path string
	pub  string
}

// newKey runs ssh-keygen for an Ed25519 key without passphrase.
func newKey(t *testing.T, dir, name string) keyPair {
	t.Helper()
	if _, err := exec.LookPath("ssh-keygen"); err != nil {
		testdb.Unavailable(t, "ssh-keygen not installed")
	}
	path := filepath.Join(dir, name)
	out, err := exec.Command("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", name+"@test", "-f", path).CombinedOutput()
	if err != nil {
		t.Fatalf("ssh-keygen: %v\n%s", err, out)
	}
	pub, err := os.ReadFile(path + ".pub")
	if err != nil {
		t.Fatal(err)
	}
	return keyPair{path: path, pub: strings.TrimSpace(string(pub))}
}

// writeFile writes a file with mode 0600.
func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, 0o600); err != nil {
		t.Fatal(err)
	}
}

// fixture is a running server with an operator, a viewer and a stranger
// key (not in authorized_keys).
type fixture struct {
	t                          *testing.T
	dir, addr, port            string
	hostKey, authorizedKeys    string
	operator, viewer, stranger keyPair
	server                     *Server
	stop                       context.CancelFunc
	done                       chan struct{} // closed when Serve returned
	served                     error         // what Serve returned
	log                        *syncBuffer
}

// startFixture starts a server whose sessions run app (helloApp if nil);
// cfg's paths and App are filled in.
func startFixture(t *testing.T, cfg Config) *fixture {
	t.Helper()
	if _, err := exec.LookPath("ssh"); err != nil {
		testdb.Unavailable(t, "ssh (the OpenSSH client) not installed")
	}
	dir := t.TempDir()
	f := &fixture{t: t, dir: dir, log: &syncBuffer{}}
	f.operator = newKey(t, dir, "operator")
	f.viewer = newKey(t, dir, "viewer")
	f.stranger = newKey(t, dir, "stranger")
	f.hostKey = filepath.Join(dir, "host", "ssh_host_ed25519_key")
	f.authorizedKeys = filepath.Join(dir, "authorized_keys")
	writeFile(t, f.authorizedKeys, fmt.Sprintf("# lockctl console\nrole=\"operator\",actor=\"alice\" %s\nrole=\"viewer\",actor=\"bob\" %s\n",
		f.operator.pub, f.viewer.pub))
	cfg.HostKeyPath, cfg.AuthorizedKeysPath = f.hostKey, f.authorizedKeys
	if cfg.App == nil {
		cfg.App = helloApp
	}
	cfg.Log = f.logger()
	f.start(cfg)
	return f
}

// logger writes to the fixture's log buffer.
func (f *fixture) logger() *slog.Logger {
	return slog.New(slog.NewTextHandler(f.log, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// start (re)starts the server on a fresh port.
func (f *fixture) start(cfg Config) {
	t := f.t
	t.Helper()
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	f.server, f.stop, f.done = s, cancel, done
	f.addr = ln.Addr().String()
	_, f.port, _ = net.SplitHostPort(f.addr)
	go func() { f.served = s.Serve(ctx, ln); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
}

// shutdown ends the server as SIGTERM would and returns Serve's result.
func (f *fixture) shutdown() error {
	f.stop()
	<-f.done
	return f.served
}

// sshArgs is an OpenSSH client command line for key, with no config file,
// agent or other identity, trusting the host key on first use into the
// fixture's known_hosts; extra options come before the destination.
func (f *fixture) sshArgs(key keyPair, extra ...string) []string {
	args := []string{"ssh", "-F", "/dev/null", "-p", f.port, "-i", key.path,
		"-o", "IdentitiesOnly=yes", "-o", "IdentityAgent=none", "-o", "BatchMode=yes",
		"-o", "StrictHostKeyChecking=accept-new", "-o", "UserKnownHostsFile=" + filepath.Join(f.dir, "known_hosts"),
		"-o", "LogLevel=ERROR"}
	args = append(args, extra...)
	return append(args, "lockctl@127.0.0.1")
}

// run runs the ssh client without a terminal and returns its output and
// exit code.
func (f *fixture) run(key keyPair, extra ...string) (string, int) {
	f.t.Helper()
	argv := f.sshArgs(key, extra...)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdin = strings.NewReader("")
	out, err := cmd.CombinedOutput()
	code := 0
	if err != nil {
		ee, ok := err.(*exec.ExitError)
		if !ok {
			f.t.Fatalf("ssh: %v", err)
		}
		code = ee.ExitCode()
	}
	return string(out), code
}

// pane runs the ssh client for key in a tmux pane (a terminal, so ssh asks
// for a PTY).
func (f *fixture) pane(key keyPair, extra ...string) *tmuxtest.Pane {
	return tmuxtest.Start(f.t, 80, 24, nil, f.sshArgs(key, extra...)...)
}

// helloApp is a trivial program: it shows who the session is, counts the
// keys it got, and quits on q.
func helloApp(_ context.Context, s Session) tea.Model { return &hello{s: s} }

type hello struct {
	s    Session
	keys int
	w, h int
}

func (m *hello) Init() tea.Cmd { return nil }

func (m *hello) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		m.w, m.h = msg.Width, msg.Height
	case tea.KeyPressMsg:
		if msg.String() == "q" {
			return m, tea.Quit
		}
		m.keys++
	}
	return m, nil
}

func (m *hello) View() tea.View {
	v := tea.NewView(fmt.Sprintf("hello %s, role %s, %dx%d, keys %d", m.s.Actor, m.s.Role, m.w, m.h, m.keys))
	v.AltScreen = true
	return v
}

// syncBuffer is a log sink safe for the server's goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

var _ io.Writer = (*syncBuffer)(nil)

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// tmuxStartArgv runs argv in an 80x24 pane.
func tmuxStartArgv(t *testing.T, argv []string) *tmuxtest.Pane {
	return tmuxtest.Start(t, 80, 24, nil, argv...)
}
