package sshserve

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	tea "charm.land/bubbletea/v2"
	"charm.land/ssh"
	"charm.land/wish/v2"
	gossh "golang.org/x/crypto/ssh"
)

// Config configures a Server. Zero durations and counts mean the defaults.
type Config struct {
	// HostKeyPath is the server's private key, created (Ed25519, mode 0600,
	// with its directory) when missing. Required.
	HostKeyPath string
	// AuthorizedKeysPath lists the keys allowed in, each with its role and
	// actor (see package doc). Required.
	AuthorizedKeysPath string
	// App builds the program's model for one session. ctx ends when the
	// session does; commands of the model should use it. An error is shown
	// to the client, which then exits 1. Required.
	App func(ctx context.Context, s Session) (tea.Model, error)
	// IdleTimeout ends a session that sent no input for this long.
	// Defaults to DefaultIdleTimeout.
	IdleTimeout time.Duration
	// MaxSessions bounds the sessions open at once; one more is refused
	// with a message. Defaults to DefaultMaxSessions.
	MaxSessions int
	// MaxSessionAge ends a session this long after it opened, with a
	// message to the client. Defaults to DefaultMaxSessionAge.
	MaxSessionAge time.Duration
	// HandshakeTimeout bounds a connection's key exchange and
	// authentication. Defaults to DefaultHandshakeTimeout.
	HandshakeTimeout time.Duration
	// HandshakesPerAddress bounds the connections one address (an IPv6
	// /64) may have in their handshake at once; one more is closed at
	// once. Authenticated connections do not count. Defaults to
	// DefaultHandshakesPerAddress.
	HandshakesPerAddress int
	// KeysCheckInterval is how often the authorized keys file is checked
	// for changes besides every authentication attempt; at each re-read
	// the sessions of keys no longer in it end. Defaults to
	// DefaultKeysCheckInterval.
	KeysCheckInterval time.Duration
	// ShutdownWait bounds how long Serve waits, once its context ends, for
	// the sessions' programs to quit and restore their terminals before it
	// closes the connections. Defaults to DefaultShutdownWait.
	ShutdownWait time.Duration
	// Log receives the server's log (start, sessions, refusals). Defaults
	// to slog.Default().
	Log *slog.Logger
}

// Defaults of Config.
const (
	DefaultIdleTimeout          = 15 * time.Minute
	DefaultMaxSessions          = 10
	DefaultMaxSessionAge        = 12 * time.Hour
	DefaultHandshakeTimeout     = 10 * time.Second
	DefaultHandshakesPerAddress = 4
	DefaultKeysCheckInterval    = 2 * time.Second
	DefaultShutdownWait         = 5 * time.Second
)

// Session is what Config.App knows of the session it builds a model for.
type Session struct {
	Identity
	Remote string // the client's address
	Width  int    // the terminal's size when the session opened
	Height int
}

// Server serves one Bubble Tea program per SSH session.
type Server struct {
	cfg        Config
	keys       *keyring
	ssh        *ssh.Server
	host       gossh.Signer
	handshakes *handshakes

	sessions atomic.Int64 // open sessions (running a program or about to)

	mu       sync.Mutex
	running  map[*sessionState]struct{} // sessions running a program: the shutdown quits them, a key's removal ends them
	stopping bool
	handlers sync.WaitGroup // session handlers still running
}

// New checks the configuration, loads (or creates) the host key and reads
// the authorized keys. Every problem with them is an error here, before
// anything listens.
func New(cfg Config) (*Server, error) {
	switch {
	case cfg.HostKeyPath == "":
		return nil, errors.New("sshserve: a host key path is required")
	case cfg.AuthorizedKeysPath == "":
		return nil, errors.New("sshserve: an authorized keys path is required")
	case cfg.App == nil:
		return nil, errors.New("sshserve: Config.App is required")
	case cfg.IdleTimeout < 0 || cfg.MaxSessions < 0 || cfg.MaxSessionAge < 0 || cfg.HandshakeTimeout < 0 ||
		cfg.HandshakesPerAddress < 0 || cfg.KeysCheckInterval < 0 || cfg.ShutdownWait < 0:
		return nil, errors.New("sshserve: timeouts and limits must not be negative")
	}
	if cfg.IdleTimeout == 0 {
		cfg.IdleTimeout = DefaultIdleTimeout
	}
	if cfg.MaxSessions == 0 {
		cfg.MaxSessions = DefaultMaxSessions
	}
	if cfg.MaxSessionAge == 0 {
		cfg.MaxSessionAge = DefaultMaxSessionAge
	}
	if cfg.HandshakeTimeout == 0 {
		cfg.HandshakeTimeout = DefaultHandshakeTimeout
	}
	if cfg.HandshakesPerAddress == 0 {
		cfg.HandshakesPerAddress = DefaultHandshakesPerAddress
	}
	if cfg.KeysCheckInterval == 0 {
		cfg.KeysCheckInterval = DefaultKeysCheckInterval
	}
	if cfg.ShutdownWait == 0 {
		cfg.ShutdownWait = DefaultShutdownWait
	}
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	host, created, err := loadHostKey(cfg.HostKeyPath)
	if err != nil {
		return nil, err
	}
	if created {
		cfg.Log.Info("host key created", "path", cfg.HostKeyPath, "fingerprint", gossh.FingerprintSHA256(host.PublicKey()))
	}
	keys, err := loadKeyring(cfg.AuthorizedKeysPath, cfg.Log)
	if err != nil {
		return nil, err
	}
	s := &Server{cfg: cfg, keys: keys, host: host, handshakes: newHandshakes(cfg.HandshakesPerAddress),
		running: map[*sessionState]struct{}{}}
	keys.changed = s.endRevoked
	s.ssh, err = wish.NewServer(
		// Public keys only: with no password or keyboard-interactive
		// handler the server offers neither method.
		wish.WithPublicKeyAuth(s.authorize),
		wish.WithMiddleware(s.middleware()...),
		func(srv *ssh.Server) error {
			srv.AddHostKey(host)
			srv.HandshakeTimeout = cfg.HandshakeTimeout
			srv.ConnCallback = s.admitConn
			srv.ServerConfigCallback = serverConfig
			srv.ConnectionFailedCallback = func(c net.Conn, err error) {
				cfg.Log.Info("connection refused", "remote", c.RemoteAddr().String(), "err", err)
			}
			return nil
		},
	)
	if err != nil {
		return nil, fmt.Errorf("sshserve: %w", err)
	}
	return s, nil
}

// HostKeyFingerprint is the SHA256 fingerprint clients are shown.
func (s *Server) HostKeyFingerprint() string { return gossh.FingerprintSHA256(s.host.PublicKey()) }

// authorize is the public-key check during authentication. It may be
// asked about several keys (the client offers them in turn), so it only
// answers; the session looks up the key that was actually used again.
func (s *Server) authorize(ctx ssh.Context, key ssh.PublicKey) bool {
	id, ok := s.keys.lookup(key)
	if !ok {
		s.cfg.Log.Info("key refused", "remote", ctx.RemoteAddr().String(), "user", ctx.User(),
			"fingerprint", gossh.FingerprintSHA256(key))
		return false
	}
	s.cfg.Log.Debug("key accepted", "actor", id.Actor, "role", id.Role, "fingerprint", id.Fingerprint)
	return true
}

// Serve accepts sessions on ln until ctx ends, then quits every session's
// program (each restores its terminal and the session exits 0), waits up
// to ShutdownWait for them, and closes what is left. It returns nil after
// such a shutdown.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	s.cfg.Log.Info("serving the console over SSH", "addr", ln.Addr().String(),
		"host_key", s.HostKeyFingerprint(), "authorized_keys", s.cfg.AuthorizedKeysPath,
		"max_sessions", s.cfg.MaxSessions, "idle_timeout", s.cfg.IdleTimeout.String(),
		"max_session_age", s.cfg.MaxSessionAge.String(), "handshake_timeout", s.cfg.HandshakeTimeout.String(),
		"handshakes_per_address", s.cfg.HandshakesPerAddress)
	served := make(chan error, 1)
	go func() { served <- s.ssh.Serve(ln) }()
	checks, stopChecks := context.WithCancel(ctx)
	defer stopChecks()
	go s.keys.watch(checks, s.cfg.KeysCheckInterval)
	select {
	case err := <-served:
		return err
	case <-ctx.Done():
	}
	// Closed here too: Serve may not have registered it with the server yet.
	_ = ln.Close()
	s.shutdown()
	if err := <-served; err != nil && !errors.Is(err, ssh.ErrServerClosed) && !errors.Is(err, net.ErrClosed) {
		return err
	}
	return nil
}

// shutdown ends every session as cleanly as the clients allow.
func (s *Server) shutdown() {
	s.mu.Lock()
	s.stopping = true
	programs := make([]*tea.Program, 0, len(s.running))
	for st := range s.running {
		programs = append(programs, st.program)
	}
	s.mu.Unlock()
	s.cfg.Log.Info("shutting down", "sessions", len(programs))
	// Stop accepting first, so no session starts after the programs quit.
	shut, cancel := context.WithCancel(context.Background())
	cancel()
	_ = s.ssh.Shutdown(shut)
	for _, p := range programs {
		p.Quit()
	}
	deadline := time.Now().Add(s.cfg.ShutdownWait)
	done := make(chan struct{})
	go func() { s.handlers.Wait(); close(done) }()
	select {
	case <-done:
		// Each client has its exit status; closing its connection now
		// would race its own disconnect message, and ssh would report a
		// broken pipe and exit 255. Give the clients a moment to hang up.
		hangUp, cancel := context.WithTimeout(context.Background(), min(time.Until(deadline), clientHangUpWait))
		_ = s.ssh.Shutdown(hangUp)
		cancel()
	case <-time.After(time.Until(deadline)):
		s.cfg.Log.Warn("sessions still open after the shutdown wait: closing them", "wait", s.cfg.ShutdownWait.String())
	}
	_ = s.ssh.Close()
}

// clientHangUpWait bounds how long a shutdown waits, after every session
// has ended, for the clients to close their connections.
const clientHangUpWait = 2 * time.Second
