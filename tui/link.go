package tui

import "github.com/lockctl/lockctl/store"

// link is the root's view of the database connection: the last good
// snapshot and how the polls since have gone.
type link struct {
	snap    Snapshot
	hasSnap bool
	// caps is what the role may do, read with the first poll after each
	// (re)connection; until then every action is offered.
	caps    store.RoleCapabilities
	hasCaps bool
	// sawLockctlTable is set by the first page of lockctl's table after each
	// (re)connection: later polls skip the shape check, since a migrated
	// table does not turn back into the reference service's.
	sawLockctlTable bool
	failures        int // consecutive failed polls
	lastErr         error
	// server is where the last good poll read (server.go); leftServer and
	// leftWhy say which one the console moved away from, and why.
	server, leftServer, leftWhy string
}

// pollFailed counts a failed poll. The role and the table may differ
// after a reconnection (on another server), so both are read again.
func (m *Model) pollFailed(err error) {
	m.failures++
	m.lastErr = err
	m.hasCaps = false
	m.sawLockctlTable = false
}

// pollSucceeded keeps a good poll's snapshot.
func (m *Model) pollSucceeded(s Snapshot) {
	m.noteServer(s.Server)
	m.failures, m.lastErr = 0, nil
	if s.Caps != nil {
		m.caps, m.hasCaps = *s.Caps, true
	}
	m.snap, m.hasSnap = s, true
	m.sawLockctlTable = !s.Page.Reference
	m.keys = m.actionKeys()
}

// actionKeys enables the actions that can succeed, in keys and help: none
// with --read-only or on the reference service's table (lockctl cannot
// write it until it is migrated), else those the role may do, or all
// while the role's capabilities are not known yet.
func (m Model) actionKeys() KeyMap {
	switch {
	case m.readOnly() || (m.hasSnap && m.snap.Page.Reference):
		return m.keys.withActions(false)
	case m.hasCaps:
		return m.keys.withCapabilities(m.caps)
	default:
		return m.keys.withActions(true)
	}
}
