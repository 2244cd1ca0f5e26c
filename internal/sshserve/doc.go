// Package sshserve serves a Bubble Tea program (lockctl's console) over
// SSH with wish: one program per session, the session's terminal as its
// input and output, window changes forwarded.
//
// Who may come in is the authorized_keys file, in OpenSSH's format, each
// key carrying two options that say who it is and what it may do:
//
//	role="operator",actor="alice" ssh-ed25519 AAAA… alice@laptop
//	role="viewer",actor="bob" ssh-ed25519 AAAA… bob@desk
//
// Other options (from=, command=, no-pty, …) are refused rather than
// ignored, since they would look like restrictions and restrict nothing.
// The file is checked on every authentication attempt and every
// Config.KeysCheckInterval: its permissions every time (StrictModes,
// below), its content re-read when its size, mtime, ctime or inode
// changed. At start a bad line is an error; while serving it is logged and
// skipped, and a file that became unsafe or unreadable lets no one in
// until it is fixed. After a re-read, every session whose key the file no
// longer gives the identity the session opened with is ended: its
// program's context is cancelled (so its model starts no query after),
// the client is told why and exits 1.
//
// The public-key callback can be asked about several keys during one
// authentication (a client offers its keys in turn), so it only answers
// yes or no; each session looks its key up again (the key the client
// proved it holds, from the connection's permissions) and takes its
// identity from that lookup.
//
// Refused, each with a message and exit status 1: a session without a PTY
// (activeterm), one with a command or a subsystem, one beyond
// Config.MaxSessions. Only public keys authenticate: no password or
// keyboard-interactive method is offered. A session that sends no input
// for Config.IdleTimeout is ended (a console redraws itself, so output does
// not count as activity), and every session at Config.MaxSessionAge. Port
// forwarding and agent forwarding are not served.
//
// Before its key is accepted, a connection counts against its address
// (handshake.go): at most Config.HandshakesPerAddress at once, each closed
// after Config.HandshakeTimeout. Nothing else counts connections, so idle
// connections from addresses without a key cannot keep a key holder out.
//
// StrictModes, as sshd: the authorized_keys file and the host key are
// refused when group or others may write them or their directory (a
// sticky directory such as /tmp excepted), or when they belong to neither
// this user nor root; the host key also when others may read it. The host
// key is created (Ed25519, mode 0600, its directory 0700) when missing and
// reused after, so clients keep trusting it across restarts.
//
// Shutdown (Serve's context ending, on SIGTERM) stops accepting, quits
// every program (each leaves the alternate screen and restores the
// terminal), waits up to Config.ShutdownWait for the sessions to end with
// exit status 0, then closes what is left.
package sshserve
