package sshserve

import (
	"net"
	"net/netip"
	"sync"

	"charm.land/ssh"
	gossh "golang.org/x/crypto/ssh"
)

// handshakes counts the connections still in their handshake (key
// exchange and authentication, before a key is accepted) per source, and
// refuses one beyond the limit. A source is an IPv4 address or an IPv6
// /64 (one host's or one site's addresses: a /128 alone would let one
// host open a connection from each of its many addresses).
//
// Only handshakes count: whoever has no authorized key can hold a few
// connections from each of its addresses for the handshake timeout and no
// more, and cannot fill any limit a key holder needs. An authenticated
// connection counts against no source, so operators behind one NAT are
// not refused for being many; what they may open is bounded by
// Config.MaxSessions.
type handshakes struct {
	perSource int

	mu   sync.Mutex
	open map[string]int // handshakes in progress, by source
}

func newHandshakes(perSource int) *handshakes {
	return &handshakes{perSource: perSource, open: map[string]int{}}
}

// handshake is one connection's place among its source's handshakes. It
// is given back once, when the client authenticates or the connection
// closes, whichever comes first.
type handshake struct {
	hs     *handshakes
	source string
	once   sync.Once
}

// admit takes a place for a connection from remote, or says the source
// has none left.
func (h *handshakes) admit(remote net.Addr) (*handshake, bool) {
	src := sourceOf(remote)
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.open[src] >= h.perSource {
		return nil, false
	}
	h.open[src]++
	return &handshake{hs: h, source: src}, true
}

// done gives the place back.
func (hs *handshake) done() {
	hs.once.Do(func() {
		h := hs.hs
		h.mu.Lock()
		defer h.mu.Unlock()
		if h.open[hs.source]--; h.open[hs.source] <= 0 {
			delete(h.open, hs.source)
		}
	})
}

// sourceOf is the source a remote address counts against.
func sourceOf(remote net.Addr) string {
	tcp, ok := remote.(*net.TCPAddr)
	if !ok {
		return remote.String()
	}
	ip := tcp.AddrPort().Addr().Unmap()
	if ip.Is4() {
		return ip.String()
	}
	return netip.PrefixFrom(ip, 64).Masked().String()
}

// handshakeConn gives its handshake's place back when it closes.
type handshakeConn struct {
	net.Conn
	hs *handshake
}

func (c *handshakeConn) Close() error {
	err := c.Conn.Close()
	c.hs.done()
	return err
}

// handshakeKey holds a connection's *handshake in its ssh.Context.
type handshakeKey struct{}

// admitConn is the server's ConnCallback: a connection from a source with
// no handshake place left is closed at once (the client sees the
// connection closed before the key exchange).
func (s *Server) admitConn(ctx ssh.Context, c net.Conn) net.Conn {
	hs, ok := s.handshakes.admit(c.RemoteAddr())
	if !ok {
		s.cfg.Log.Warn("connection refused: too many handshakes from its address", "remote", c.RemoteAddr().String(),
			"source", sourceOf(c.RemoteAddr()), "limit", s.cfg.HandshakesPerAddress)
		return nil
	}
	ctx.SetValue(handshakeKey{}, hs)
	return &handshakeConn{Conn: c, hs: hs}
}

// serverConfig is the base of each connection's SSH configuration: a key
// the client proved it holds ends the connection's handshake, so it no
// longer counts against its source.
func serverConfig(ctx ssh.Context) *gossh.ServerConfig {
	return &gossh.ServerConfig{
		VerifiedPublicKeyCallback: func(_ gossh.ConnMetadata, _ gossh.PublicKey, perms *gossh.Permissions, _ string) (*gossh.Permissions, error) {
			if hs, ok := ctx.Value(handshakeKey{}).(*handshake); ok {
				hs.done()
			}
			return perms, nil
		},
	}
}
