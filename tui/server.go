package tui

import (
	"github.com/jackc/pgx/v5/pgxpool"
)

// serverOf is the address of the server a pooled connection reached
// (host:port, or the socket path): with a multi-host DSN, the one that
// accepted the session.
func serverOf(c *pgxpool.Conn) string {
	if nc := c.Conn().PgConn().Conn(); nc != nil {
		return nc.RemoteAddr().String()
	}
	return ""
}

// noteServer records the server a successful poll read from. When it is not
// the one before (the console followed a failover to another host of a
// multi-host DSN), the header says which it left and what the last failed
// poll said about it (unreachable, read-only, ...).
func (m *Model) noteServer(server string) {
	if server == "" || server == m.server {
		return
	}
	if m.server != "" {
		m.leftServer, m.leftWhy = m.server, ""
		if m.lastErr != nil {
			m.leftWhy = errHead(m.lastErr)
		}
	}
	m.server = server
}
