package tui

import (
	"time"

	"charm.land/bubbles/v2/help"
	tea "charm.land/bubbletea/v2"

	"github.com/lockctl/lockctl/internal/lockview"
)

// Component is one page of the console (soft-serve's common.Component):
// it owns its state, keys and drawing; the root (Model) routes messages to
// it and owns only what every page shares (size, connection, the poller,
// the header, the action dialogs).
//
// Pages are pointers that copy on write: Update returns a changed copy and
// leaves its receiver alone, so a Model value keeps meaning one state (the
// tests hold on to earlier ones). SetSize changes the page in place; the
// root calls it only on the fresh copies share() has just made.
type Component interface {
	Init() tea.Cmd
	Update(tea.Msg) (Component, tea.Cmd)
	View() string
	help.KeyMap
	SetSize(width, height int)
}

// What a page may also do, each an optional interface the root looks for.
type (
	// pollAsker adds what the page needs to the next poll; active says
	// whether it is the page on screen.
	pollAsker interface {
		askPoll(req *PollRequest, active bool)
	}
	// asker hands over, and clears, what the page asked of the root in its
	// last Update or SetSize (see outbox).
	asker interface {
		takeAsks() (Component, outbox)
	}
	// lockSelector is a page with a selected lock: the actions (renew,
	// expire, release) apply to it and enter opens its detail page.
	lockSelector interface {
		selectedLock() (lockview.ListedLock, bool)
	}
	// holderSelector is a lockSelector that knows the holders of its
	// selected lock when that is a shared or semaphore key's group (known
	// is false when they were not read), and may select one of them (the
	// detail page): the actions then act on that holder's lease instead
	// of the key.
	holderSelector interface {
		selectedHolders() (holders []lockview.Holder, known bool)
		selectedHolder() (lockview.Holder, bool)
	}
	// keySelector is a page that selects a key without its lock row (the
	// blocking page's waits): enter opens the key's detail page; the
	// actions, which need the row the operator saw, do not apply.
	keySelector interface {
		selectedKey() (string, bool)
	}
	// sessionSelector is a page that selects a session (the sessions
	// page): x ends it, after a confirmation.
	sessionSelector interface {
		selectedSession() (lockview.Session, bool)
	}
	// capturer is a page whose text input has the keyboard: the root passes
	// it every key (q is a letter there, not quit).
	capturer interface {
		capturing() bool
	}
	// windowed is a page that shows a window of time (the hot keys page):
	// the detail page it opens shows the key's times over the same one.
	windowed interface {
		window() time.Duration
	}
	// headerLiner adds the last line of the header (the home page's query).
	headerLiner interface {
		headerLine() string
	}
)

// outbox is what a page asks of the root in one Update or SetSize: the
// root reads and empties it right after, so a key that changes the query
// takes effect in the same frame rather than one message later.
type outbox struct {
	poll     bool   // poll now, or as soon as the poll out returns
	newQuery bool   // the query changed: replies to the old one are stale
	flash    *flash // the message line
}

// pageID names a page.
type pageID int

const (
	pageNone pageID = iota
	pageLocks
	pageDetail
	pageEvents
	pageBlocking
	pageSessions
	pageHotKeys
	pageHelp
	pageCount // the size of Model.pages
)

// common is what the root shares with every page, by value: the root
// hands each page a fresh copy (commonMsg) after every message it handles,
// so a page never reads the root's state from elsewhere.
type common struct {
	styles Styles
	keys   KeyMap
	// advance is how far rows count down from the snapshot on screen
	// (Model.advance): zero before the first.
	advance   time.Duration
	hasSnap   bool
	failing   bool          // the last poll failed
	paused    bool          // refresh is paused
	age       time.Duration // how long ago the snapshot on screen was read
	reference bool          // the reference service's table: no TTL, history or waiters
	readOnly  bool
	width     int // the terminal's
}
