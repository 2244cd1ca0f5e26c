package sshserve

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	tea "charm.land/bubbletea/v2"

	"github.com/lockctl/lockctl/internal/sshtest"
	"github.com/lockctl/lockctl/internal/tmuxtest"
)

type keyPair = sshtest.Key

func writeFile(t *testing.T, path, content string) { sshtest.WriteFile(t, path, content) }

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
	dir := t.TempDir()
	f := &fixture{t: t, dir: dir, log: &syncBuffer{}}
	f.operator = sshtest.NewKey(t, dir, "operator")
	f.viewer = sshtest.NewKey(t, dir, "viewer")
	f.stranger = sshtest.NewKey(t, dir, "stranger")
	f.hostKey = filepath.Join(dir, "host", "ssh_host_ed25519_key")
	f.authorizedKeys = filepath.Join(dir, "authorized_keys")
	writeFile(t, f.authorizedKeys, fmt.Sprintf("# lockctl console\nrole=\"operator\",actor=\"alice\" %s\nrole=\"viewer\",actor=\"bob\" %s\n",
		f.operator.Pub, f.viewer.Pub))
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

// sshArgs is the ssh command line for key (see sshtest.Args).
func (f *fixture) sshArgs(key keyPair, extra ...string) []string {
	return sshtest.Args(f.port, filepath.Join(f.dir, "known_hosts"), key, extra...)
}

// run runs the ssh client without a terminal.
func (f *fixture) run(key keyPair, extra ...string) (string, int) {
	f.t.Helper()
	return sshtest.Run(f.t, f.sshArgs(key, extra...))
}

// pane runs the ssh client for key in a tmux pane (a terminal, so ssh asks
// for a PTY).
func (f *fixture) pane(key keyPair, extra ...string) *tmuxtest.Pane {
	return tmuxtest.Start(f.t, 80, 24, nil, f.sshArgs(key, extra...)...)
}

// helloApp is a trivial program: it shows who the session is, counts the
// keys it got, and quits on q.
func helloApp(_ context.Context, s Session) (tea.Model, error) { return &hello{s: s}, nil }

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
