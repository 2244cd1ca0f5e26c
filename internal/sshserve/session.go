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

// sessionState is one session's identity and what ended it.
type sessionState struct {
	id      Identity
	started time.Time
	idled   atomic.Bool // ended by the idle timeout
	ended   string      // why the program ended, for the log (set by run)
}

// track counts the handler for the shutdown, logs the session's end, and
// sends the exit status itself before the shutdown may close the
// connection.
func (s *Server) track(next ssh.Handler) ssh.Handler {
	return func(sess ssh.Session) {
		s.handlers.Add(1)
		defer s.handlers.Done()
		next(sess)
		_ = sess.Exit(0)
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
		st := &sessionState{id: id, started: time.Now()}
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
		p := tea.NewProgram(model, append(bm.MakeOptions(sess), tea.WithInput(input), tea.WithContext(ctx),
			tea.WithoutSignalHandler())...)
		if !s.register(p) {
			wish.Fatalln(sess, "lockctl: the server is shutting down")
			return
		}
		defer s.unregister(p)
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
		next(sess)
	}
}

// endReason says why a session's program ended.
func (s *Server) endReason(st *sessionState, err error) string {
	s.mu.Lock()
	stopping := s.stopping
	s.mu.Unlock()
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

// register adds p to the programs the shutdown quits; false once the
// server is stopping.
func (s *Server) register(p *tea.Program) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopping {
		return false
	}
	s.running[p] = struct{}{}
	return true
}

func (s *Server) unregister(p *tea.Program) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.running, p)
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
