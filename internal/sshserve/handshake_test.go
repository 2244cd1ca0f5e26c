package sshserve

import (
	"errors"
	"net"
	"os"
	"testing"
	"time"
)

// idleConns opens n TCP connections to addr from the address from and
// sends nothing on them, as someone without a key holding the server's
// handshakes would.
func idleConns(t *testing.T, from, addr string, n int) []net.Conn {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}, Timeout: 5 * time.Second}
	conns := make([]net.Conn, 0, n)
	for range n {
		c, err := d.Dial("tcp", addr)
		if err != nil {
			t.Fatalf("dial from %s: %v", from, err)
		}
		t.Cleanup(func() { c.Close() })
		conns = append(conns, c)
	}
	return conns
}

// stillOpen counts the connections the server has not closed: a read
// that times out finds the connection open (the server's version line,
// sent at once, is read and skipped first).
func stillOpen(t *testing.T, conns []net.Conn) int {
	t.Helper()
	open := 0
	buf := make([]byte, 256)
	for _, c := range conns {
		for {
			_ = c.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
			if _, err := c.Read(buf); err != nil {
				if errors.Is(err, os.ErrDeadlineExceeded) {
					open++
				}
				break
			}
		}
	}
	return open
}

// Someone without a key floods the server with idle connections: from
// one address it gets HandshakesPerAddress of them and every further one
// is closed at once; meanwhile a key holder from another address gets in,
// and so does one from an address whose handshakes are within the limit,
// although the idle connections outnumber twice the session limit.
func TestHandshakeFloodLocksNoKeyOut(t *testing.T) {
	f := startFixture(t, Config{MaxSessions: 3, HandshakeTimeout: time.Minute, HandshakesPerAddress: 4})
	flood := idleConns(t, "127.0.0.2", f.addr, 20)
	// Another address's idle connections, one fewer than its limit.
	neighbour := idleConns(t, "127.0.0.4", f.addr, 3)

	op := f.pane(f.operator, "-o", "BindAddress=127.0.0.3")
	op.WaitFor("hello alice", within)
	view := f.pane(f.viewer, "-o", "BindAddress=127.0.0.4")
	view.WaitFor("hello bob", within)
	// The flood is still on: the key holders did not get in through
	// places it gave up.
	if open := stillOpen(t, flood); open != 4 {
		t.Errorf("%d of 20 idle connections from one address open; want 4 (the per-address limit)", open)
	}
	if open := stillOpen(t, neighbour); open != 3 {
		t.Errorf("%d of the neighbour's 3 idle connections open; want 3", open)
	}
	// The key holders' sessions freed their handshake places: the
	// neighbour's address takes one more idle connection.
	if open := stillOpen(t, idleConns(t, "127.0.0.4", f.addr, 2)); open != 1 {
		t.Errorf("%d of 2 more idle connections from the neighbour's address open; want 1", open)
	}
	op.Keys("z")
	op.WaitFor("keys 1", within)
}

// A connection that does not authenticate within HandshakeTimeout is
// closed, and its place is free again.
func TestHandshakeTimeoutClosesIdleConnections(t *testing.T) {
	f := startFixture(t, Config{HandshakeTimeout: 500 * time.Millisecond, HandshakesPerAddress: 1})
	conns := idleConns(t, "127.0.0.5", f.addr, 1)
	_ = conns[0].SetReadDeadline(time.Now().Add(within))
	buf := make([]byte, 256)
	for {
		if _, err := conns[0].Read(buf); err != nil {
			if errors.Is(err, os.ErrDeadlineExceeded) {
				t.Fatalf("an idle connection is still open after %s", within)
			}
			break
		}
	}
	f.pane(f.operator, "-o", "BindAddress=127.0.0.5").WaitFor("hello alice", within)
}

func TestSourceOfGroupsIPv6By64(t *testing.T) {
	for addr, want := range map[string]string{
		"192.0.2.7:22":                 "192.0.2.7",
		"[::ffff:192.0.2.7]:22":        "192.0.2.7",
		"[2001:db8:1:2:3:4:5:6]:22":    "2001:db8:1:2::/64",
		"[2001:db8:1:2:ffff::1]:40000": "2001:db8:1:2::/64",
	} {
		tcp, err := net.ResolveTCPAddr("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		if got := sourceOf(tcp); got != want {
			t.Errorf("sourceOf(%s) = %s, want %s", addr, got, want)
		}
	}
}
