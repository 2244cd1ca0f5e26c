package tui

import (
	"time"

	"github.com/lockctl/lockctl/internal/lockview"
	"github.com/lockctl/lockctl/internal/operator"
	"github.com/lockctl/lockctl/locker"
)

// pollTickMsg says it is time to poll; ticks of an older generation (armed
// before the interval changed or a newer tick was armed) are ignored.
type pollTickMsg struct{ gen int }

// frameMsg redraws the countdowns between polls.
type frameMsg struct{}

// pageLoadedMsg is one poll's result. seq is the poll's number and
// querySeq the query generation it was asked under.
type pageLoadedMsg struct {
	seq, querySeq int
	snap          Snapshot
	err           error
}

// actionKind names an operator action.
type actionKind string

const (
	actAcquire  actionKind = "acquire"
	actRenew    actionKind = "renew"
	actExpire   actionKind = "force-expire"
	actRelease  actionKind = "force-release"
	actEndDelay actionKind = "end-delay"
	actRevoke   actionKind = "revoke"
	// actEndSession ends a session, not a key's lease: its request and
	// result name "session N" where the others name a key.
	actEndSession actionKind = "end-session"
)

// actionDoneMsg is the result of an action; seq matches the request.
type actionDoneMsg struct {
	seq   int
	kind  actionKind
	key   string
	token int64 // the token the operator acted on (0 for acquire)
	lease locker.Lease
	ended operator.EndedDelay // end-delay's
	// session is the session end-session ended, expired how many leases
	// that took.
	session int64
	expired int
	slot    int32 // the holder's, when the action took one holder's lease
	err     error
}

// contextSwitchedMsg is a context's connection opened for switch seq (or
// why it could not be).
type contextSwitchedMsg struct {
	seq  int
	name string
	conn Connection
	err  error
}

// exportDoneMsg is an export's result: rows of name written to path, or
// why not.
type exportDoneMsg struct {
	name, path string
	rows       int
	err        error
}

// commonMsg carries the root's common to a page; onScreen says whether
// the page is the one drawn (the others need not redraw their content).
type commonMsg struct {
	common   common
	onScreen bool
}

// snapshotMsg hands each page a good poll's snapshot; a page takes the
// parts it asked for.
type snapshotMsg struct{ snap Snapshot }

// pageOpenedMsg tells a page it is now on screen. lock is the lock
// selected on the page it was opened from, if any; key is the selected
// key (lock's, or one the page selects without its row, keySelector).
// returned: the page is back on screen because esc closed a page opened
// from it; it keeps its place.
type pageOpenedMsg struct {
	lock *lockview.ListedLock
	// holders are lock's holders, when it is a group's row, as the page
	// it was opened from knows them (holdersKnown: it read them), shown
	// until the page's own poll.
	holders      []lockview.Holder
	holdersKnown bool
	key          string
	// window is the window of time the page it was opened from shows (0:
	// none): the detail page shows the key's times over it.
	window   time.Duration
	returned bool
}
