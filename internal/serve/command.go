package serve

import (
	"context"
	"time"

	"github.com/spf13/cobra"

	"github.com/lockctl/lockctl/internal/cli"
	"github.com/lockctl/lockctl/internal/sshserve"
)

// Command is `lockctl serve`, for main.go's command tree.
func Command() *cobra.Command {
	var o Options
	cmd := &cobra.Command{
		Use: "serve",
		Short: "serve the console over SSH (--ssh ADDR) to the keys in --authorized-keys, each with its role (viewer, operator) " +
			"and the actor its actions are recorded under",
		RunE: cli.RunE(func(ctx context.Context, env cli.Env, _ []string) int { return Run(ctx, env, o) }),
	}
	fs := cmd.Flags()
	fs.StringVar(&o.SSH, "ssh", "", "`host:port` to serve SSH on (:2222 for every interface)")
	fs.StringVar(&o.HostKey, "host-key", "", "the server's private key `file` (created, Ed25519, when missing)")
	fs.StringVar(&o.AuthorizedKeys, "authorized-keys", "", "authorized_keys `file`: role=\"viewer\"|\"operator\",actor=\"NAME\" before each key")
	cli.TTLVar(fs, &o.Refresh, "refresh", time.Second, "how often the shared poll reads the database (at least 100ms)")
	cli.TTLVar(fs, &o.IdleTimeout, "idle-timeout", sshserve.DefaultIdleTimeout, "end a session that sent no key for this long")
	fs.IntVar(&o.MaxSessions, "max-sessions", sshserve.DefaultMaxSessions, "at most `N` sessions open at once; one more is refused with a message")
	cli.TTLVar(fs, &o.MaxSessionAge, "max-session-age", sshserve.DefaultMaxSessionAge, "end a session this long after it opened, telling the client")
	cli.TTLVar(fs, &o.HandshakeTimeout, "handshake-timeout", sshserve.DefaultHandshakeTimeout,
		"close a connection that has not authenticated within this long")
	fs.IntVar(&o.HandshakesPerAddress, "max-handshakes-per-address", sshserve.DefaultHandshakesPerAddress,
		"at most `N` connections from one address (an IPv6 /64) still authenticating at once; authenticated ones do not count")
	cli.TTLVar(fs, &o.TTL, "ttl", 30*time.Second, "default lease length in the console's acquire form")
	cli.Required(fs, "ssh", "host-key", "authorized-keys")
	return cli.ReadOnlyOK(cmd)
}
