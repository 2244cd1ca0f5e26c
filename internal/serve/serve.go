// Package serve is `lockctl serve`: the console over SSH. Package sshserve
// runs the SSH server; this package gives each session a console (package
// tui) for its key's actor and role.
package serve

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/lockctl/lockctl/internal/cli"
	"github.com/lockctl/lockctl/internal/operator"
	"github.com/lockctl/lockctl/internal/sshserve"
	"github.com/lockctl/lockctl/locker"
	"github.com/lockctl/lockctl/tui"
)

// Options are serve's flags.
type Options struct {
	SSH, HostKey, AuthorizedKeys      string
	Refresh, IdleTimeout, TTL         time.Duration
	MaxSessionAge, HandshakeTimeout   time.Duration
	MaxSessions, HandshakesPerAddress int
}

// closeWait bounds closing the pool at exit, as the local console's quit.
const closeWait = 300 * time.Millisecond

// Run serves until ctx ends (SIGTERM, SIGINT), then ends every session
// cleanly and returns ExitOK.
func Run(ctx context.Context, env cli.Env, o Options) int {
	switch {
	case o.Refresh < 100*time.Millisecond:
		return env.Usagef("invalid --refresh %s: must be at least 100ms", o.Refresh)
	case o.MaxSessions < 1:
		return env.Usagef("invalid --max-sessions %d: must be at least 1", o.MaxSessions)
	case o.HandshakesPerAddress < 1:
		return env.Usagef("invalid --max-handshakes-per-address %d: must be at least 1", o.HandshakesPerAddress)
	}
	// One locker validates --ttl before anything starts; each operator
	// session gets its own, recording its actor.
	if _, err := locker.New(locker.Config{TTL: o.TTL}); err != nil {
		return env.Usagef("invalid --ttl: %v", err)
	}
	log := slog.New(slog.NewTextHandler(env.Stderr, nil))
	// Not cli.Connect: the server starts while the database is down, and
	// the consoles show themselves reconnecting.
	pool, err := cli.Open(ctx, env.DSN)
	if err != nil {
		return env.Fail(err)
	}
	defer cli.CloseWithin(pool, closeWait)
	quiet := env
	quiet.Stderr = io.Discard
	notifier, stopNotifier, err := cli.StartNotifier(ctx, quiet, pool)
	if err != nil {
		return env.Fail(err)
	}
	defer stopNotifier()
	// One source for every session: sessions on the same view share its
	// reads (tui.SharedSource), and an action drops what it kept, so the
	// acting session's next poll, as everyone's, reads afresh.
	shared := tui.NewSharedPoolSource(ctx, pool, o.Refresh)
	c := consoles{
		base: tui.Options{Pool: pool, Refresh: o.Refresh, TTL: o.TTL, ReadOnly: env.Context.ReadOnly,
			Server: cli.ServerName(pool.Config().ConnConfig), WakeUps: cli.WakeUps(notifier),
			Source: shared, ActionDone: shared.Invalidate},
		log: log,
	}
	srv, err := sshserve.New(sshserve.Config{
		HostKeyPath: o.HostKey, AuthorizedKeysPath: o.AuthorizedKeys,
		IdleTimeout: o.IdleTimeout, MaxSessions: o.MaxSessions, MaxSessionAge: o.MaxSessionAge,
		HandshakeTimeout: o.HandshakeTimeout, HandshakesPerAddress: o.HandshakesPerAddress,
		App: c.open, Log: log,
	})
	if err != nil {
		return env.Fail(err)
	}
	ln, err := net.Listen("tcp", o.SSH)
	if err != nil {
		return env.Fail(fmt.Errorf("--ssh %s: %w", o.SSH, err))
	}
	if err := srv.Serve(ctx, ln); err != nil {
		return env.Fail(err)
	}
	return cli.ExitOK
}

// consoles builds one console per session from the options all share.
type consoles struct {
	base tui.Options
	log  *slog.Logger
}

// open is the console of one session: a viewer's is read-only and has no
// locker at all, so no path in it can write; so is every session's under
// a read-only context; an operator's records its actor on every action's
// event. Its polls and actions run under ctx, so
// a session the server ends (its key removed) can start none after.
func (c consoles) open(ctx context.Context, s sshserve.Session) (tea.Model, error) {
	opts := c.base
	opts.Owner = locker.NewOwnerID()
	canAct := s.Role.CanAct() && !c.base.ReadOnly
	opts.ReadOnly = !canAct
	who := fmt.Sprintf("over SSH as %s (%s)", s.Actor, s.Role)
	opts.Status = func() string { return who }
	if canAct {
		lk, err := locker.New(locker.Config{Actor: s.Actor, TTL: opts.TTL, LogGrants: true})
		if err != nil {
			return nil, err
		}
		if opts.Operator, err = operator.New(s.Actor); err != nil {
			return nil, err
		}
		opts.Locker = lk
	}
	return tui.New(opts).WithContext(ctx), nil
}
