package cli

import (
	"fmt"
	"syscall"
	"time"

	"github.com/lockctl/lockctl/internal/textsafe"
	"github.com/lockctl/lockctl/locker"
)

// revokeSignals are the signals run may pass a revoke on as, by name; 0:
// none (the command is not told).
var revokeSignals = map[string]syscall.Signal{
	"TERM": syscall.SIGTERM, "SIGTERM": syscall.SIGTERM, "INT": syscall.SIGINT, "SIGINT": syscall.SIGINT,
	"HUP": syscall.SIGHUP, "SIGHUP": syscall.SIGHUP, "QUIT": syscall.SIGQUIT, "SIGQUIT": syscall.SIGQUIT,
	"USR1": syscall.SIGUSR1, "SIGUSR1": syscall.SIGUSR1, "USR2": syscall.SIGUSR2, "SIGUSR2": syscall.SIGUSR2,
	"NONE": 0,
}

// revoked is what superviseChild does when an operator revokes a lease:
// the signal to send the command (0: none) once the notice is printed.
type revoked struct {
	leases <-chan locker.Lease
	signal syscall.Signal
	notice func(locker.Lease)
}

// revokeNotice passes keep's revoke on to the command as sig, saying on
// stderr who revoked which lease, why, and by when it ends at the latest.
func revokeNotice(env Env, keep *locker.Keepalive, sig syscall.Signal) revoked {
	return revoked{leases: keep.Revoked(), signal: sig, notice: func(l locker.Lease) {
		line := fmt.Sprintf("%s: %s (token %d) revoked by %s (role %s)", env.Prog, textsafe.Escape(l.Key), l.Token,
			textsafe.Escape(l.RevokedByActor), textsafe.Escape(l.RevokedByRole))
		if l.RevokeReason != "" {
			line += ": " + textsafe.Escape(l.RevokeReason)
		}
		if !l.RevokeDeadline.IsZero() {
			line += "; the lease ends by " + utc(l.RevokeDeadline).Format(time.RFC3339) + " at the latest"
		}
		if sig != 0 {
			line += "; sent " + signalName(sig) + " to the command"
		}
		env.printLine(line)
	}}
}

// signalName is "SIGTERM" for syscall.SIGTERM.
func signalName(sig syscall.Signal) string {
	for name, s := range revokeSignals {
		if s == sig && len(name) > 3 && name[:3] == "SIG" {
			return name
		}
	}
	return sig.String()
}
