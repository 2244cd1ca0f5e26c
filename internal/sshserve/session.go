package sshserve

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"

	tea "charm.land/bubbletea/v2"
	"charm.land/ssh"
	"charm.land/wish/v2"
	"charm.land/wish/v2/activeterm"
	bm "charm.land/wish/v2/bubbletea"
)

// middleware is the session's path, outermost last (wish composes the
// list so that the last one runs first): log, check the key again, require
// a terminal, refuse commands, admit within the limit, run the program.
func (s *Server) middleware() []wish.Middleware {
	return []wish.Middleware{
		s.run,
		s.limit,
		refuseCommands,
		activeterm.Middleware(),
		s.identify,
		s.track,
	}
}

// sessionKey carries the session's state from the middleware to the
// program handler.
type sessionKey struct{}

// sessionState is one session's identity, its program and what ended it.
type sessionState struct {
	id      Identity
	key     ssh.PublicKey // the key the client authenticated with
	started time.Time
	idled   atomic.Bool // ended by the idle timeout
	ended   string      // why the program ended, for the log (set by run)

	// Set by run before the session is registered.
	program *tea.Program
	cancel  context.CancelFunc // ends the program and every query of its model
	stop    atomic.Pointer[sessionEnd]
}

// sessionEnd is why the server ended a session, and what the client is
// told.
type sessionEnd struct {
	reason  string // for the log
	message string // for the client, after its terminal is restored
	status  int    // the session's exit status
}

// end ends the session for e (the first reason given counts): the
// program's context is cancelled, so the program is killed and its model
// can start no query from then on.
func (st *sessionState) end(e sessionEnd) {
	if st.stop.CompareAndSwap(nil, &e) {
		st.cancel()
	}
}

// track counts the handler for the shutdown, logs the session's end, and
// sends the exit status itself before the shutdown may close the
// connection.
func (s *Server) track(next ssh.Handler) ssh.Handler {
	return func(sess ssh.Session) {
		s.handlers.Add(1)
		defer s.handlers.Done()
		next(sess)
		status := 0
		if st, ok := sess.Context().Value(sessionKey{}).(*sessionState); ok {
			if e := st.stop.Load(); e != nil {
				status = e.status
			}
		}
		_ = sess.Exit(status)
	}
}

// identify looks the key up again now that authentication is over: the
// public-key callback may have been asked about other keys, and the file
// may have changed since. The key the session holds is the one the client
// proved it has.
func (s *Server) identify(next ssh.Handler) ssh.Handler {
	return func(sess ssh.Session) {
		remote := sess.RemoteAddr().String()
		key := sess.PublicKey()
		if key == nil {
			s.cfg.Log.Warn("session refused: no public key", "remote", remote)
			wish.Fatalln(sess, "lockctl: only public-key authentication is accepted")
			return
		}
		id, ok := s.keys.lookup(key)
		if !ok {
			s.cfg.Log.Warn("session refused: key no longer authorized", "remote", remote)
			wish.Fatalln(sess, "lockctl: this key is not authorized")
			return
		}
		st := &sessionState{id: id, key: key, started: time.Now()}
		sess.Context().SetValue(sessionKey{}, st)
		s.cfg.Log.Info("session opened", "actor", id.Actor, "role", id.Role, "fingerprint", id.Fingerprint,
			"remote", remote, "user", sess.User())
		next(sess)
		s.cfg.Log.Info("session ended", "actor", id.Actor, "remote", remote, "reason", st.ended,
			"duration", time.Since(st.started).Round(time.Second).String())
	}
}

// refuseCommands turns away `ssh host CMD`: the server serves the console
// and runs nothing else.
func refuseCommands(next ssh.Handler) ssh.Handler {
	return func(sess ssh.Session) {
		if sess.RawCommand() != "" || sess.Subsystem() != "" {
			wish.Fatalln(sess, "lockctl: this server runs only the console; connect without a command")
			return
		}
		next(sess)
	}
}

// limit refuses a session beyond MaxSessions.
func (s *Server) limit(next ssh.Handler) ssh.Handler {
	return func(sess ssh.Session) {
		defer s.sessions.Add(-1)
		if n := s.sessions.Add(1); n > int64(s.cfg.MaxSessions) {
			s.cfg.Log.Warn("session refused: session limit reached", "remote", sess.RemoteAddr().String(), "limit", s.cfg.MaxSessions)
			wish.Fatalln(sess, fmt.Sprintf("lockctl: %d sessions are open, the server's limit; try again later", s.cfg.MaxSessions))
			return
		}
		next(sess)
	}
}

// run runs the session's program until it quits, the client goes away,
// the idle timeout or the shutdown. It is bubbletea.Middleware with the
// server's own bookkeeping: the program registered for the shutdown, input
// watched for idleness, window changes forwarded.
func (s *Server) run(next ssh.Handler) ssh.Handler {
	return func(sess ssh.Session) {
		st, _ := sess.Context().Value(sessionKey{}).(*sessionState)
		pty, windows, ok := sess.Pty()
		if st == nil || !ok {
			return
		}
		ctx, cancel := context.WithCancel(sess.Context())
		defer cancel()
		st.cancel = cancel
		model, err := s.cfg.App(ctx, Session{Identity: st.id, Remote: sess.RemoteAddr().String(),
			Width: pty.Window.Width, Height: pty.Window.Height})
		if err != nil {
			s.cfg.Log.Error("session refused: the program could not start", "actor", st.id.Actor, "err", err)
			st.ended = "program could not start"
			wish.Fatalln(sess, "lockctl: "+err.Error())
			return
		}
		input := &activityReader{r: sess}
		input.touch()
		// The server owns the process's signals: a program that heard
		// SIGTERM itself would quit before the shutdown could say why.
		st.program = tea.NewProgram(model, append(bm.MakeOptions(sess), tea.WithInput(input), tea.WithContext(ctx),
			tea.WithoutSignalHandler())...)
		p := st.program
		if refusal := s.register(st); refusal != "" {
			st.ended = refusal
			wish.Fatalln(sess, "lockctl: "+refusal)
			return
		}
		defer s.unregister(st)
		aged := time.AfterFunc(s.cfg.MaxSessionAge-time.Since(st.started), func() {
			st.end(sessionEnd{reason: "max session age",
				message: fmt.Sprintf("lockctl: this session reached the server's maximum session age (%s); connect again to go on", s.cfg.MaxSessionAge),
			})
		})
		defer aged.Stop()
		stopIdle := watchIdle(input, s.cfg.IdleTimeout, func() {
			st.idled.Store(true)
			p.Quit()
		})
		defer stopIdle()
		go func() {
			for {
				select {
				case <-ctx.Done():
					return
				case w := <-windows:
					p.Send(tea.WindowSizeMsg{Width: w.Width, Height: w.Height})
				}
			}
		}()
		_, err = p.Run()
		st.ended = s.endReason(st, err)
		// Kill restores the terminal if the program did not get to.
		p.Kill()
		if e := st.stop.Load(); e != nil {
			wish.Errorln(sess, e.message)
			wish.Errorf(sess, "\r")
		}
		next(sess)
	}
}

// endReason says why a session's program ended.
func (s *Server) endReason(st *sessionState, err error) string {
	s.mu.Lock()
	stopping := s.stopping
	s.mu.Unlock()
	if e := st.stop.Load(); e != nil {
		return e.reason
	}
	switch {
	case st.idled.Load():
		return "idle timeout"
	case stopping:
		return "server shutdown"
	case errors.Is(err, tea.ErrProgramKilled):
		return "client gone"
	case err != nil:
		return "program failed: " + err.Error()
	}
	return "quit"
}

// register adds st to the sessions the shutdown quits and a key's
// removal ends. It refuses (saying why) once the server is stopping, or
// when st's key lost its identity since the session looked it up: a
// re-read between that lookup and this registration did not see st, so
// the key is looked up once more now that any later re-read will.
func (s *Server) register(st *sessionState) (refusal string) {
	s.mu.Lock()
	if s.stopping {
		s.mu.Unlock()
		return "the server is shutting down"
	}
	s.running[st] = struct{}{}
	s.mu.Unlock()
	if id, ok := s.keys.lookup(st.key); !ok || id != st.id {
		s.unregister(st)
		return "this key is not authorized"
	}
	return ""
}

func (s *Server) unregister(st *sessionState) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.running, st)
}

// activityReader is the session's input, noting when the client last
// sent something.
type activityReader struct {
	r    io.Reader
	last atomic.Int64 // unix nanoseconds
}

func (a *activityReader) Read(p []byte) (int, error) {
	n, err := a.r.Read(p)
	if n > 0 {
		a.touch()
	}
	return n, err
}

func (a *activityReader) touch() { a.last.Store(time.Now().UnixNano()) }

func (a *activityReader) idleFor(now time.Time) time.Duration {
	return now.Sub(time.Unix(0, a.last.Load()))
}

// watchIdle calls onIdle once input has been quiet for idle; the returned
// function stops the watch.
func watchIdle(input *activityReader, idle time.Duration, onIdle func()) (stop func()) {
	done := make(chan struct{})
	go func() {
		t := time.NewTimer(idle)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case now := <-t.C:
				quiet := input.idleFor(now)
				if quiet >= idle {
					onIdle()
					return
				}
				t.Reset(idle - quiet)
			}
		}
	}()
	var once sync.Once
	return func() { once.Do(func() { close(done) }) }
}
