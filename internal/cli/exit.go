package cli

// Exit codes, the same for every command, so scripts can branch on them.
const (
	ExitOK      = 0 // done
	ExitError   = 1 // database, connection or unexpected error
	ExitUsage   = 2 // unknown command or flag, missing or extra argument, bad value
	ExitHeld    = 3 // another owner holds the lock
	ExitNotHeld = 4 // the named lease is not current: lost, wrong owner or token
	// ExitDeadlock: a wait would have closed a cycle of waits (locker.ErrDeadlock).
	ExitDeadlock = 5
)
