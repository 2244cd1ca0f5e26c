package tui

import (
	"time"

	"github.com/lockctl/lockctl/internal/lockview"
	"github.com/lockctl/lockctl/locker"
	"github.com/lockctl/lockctl/store"
)

// pollTickMsg says it is time to poll; ticks of an older generation (armed
// before the interval changed or a newer tick was armed) are ignored.
type pollTickMsg struct{ gen int }

// frameMsg redraws the countdowns between polls.
type frameMsg struct{}

// snapshot is everything one poll read, with when its reply arrived.
type snapshot struct {
	page  lockview.Page
	rates lockview.Rates
	// handOver is the median release-to-grant time of recent hand-overs to
	// waiters (lockview.HandOverLatency).
	handOver lockview.HandOver
	events   []lockview.Event        // newest first; only when the events pane asked
	detail   *detailData             // only when the detail pane asked
	caps     *store.RoleCapabilities // only when the poll asked
	// receivedAt is this process's clock (with its monotonic reading) when
	// the reply arrived: remaining TTLs count down from it.
	receivedAt time.Time
	latency    time.Duration
	server     string // address of the server it was read from
}

// detailData is the selected lock's row, waiters and history.
type detailData struct {
	key     string
	lock    *lockview.ListedLock // nil: the key has no row
	waiters []lockview.Waiter
	events  []lockview.Event
}

// pageLoadedMsg is one poll's result. seq is the poll's number and
// querySeq the query generation it was asked under.
type pageLoadedMsg struct {
	seq, querySeq int
	snap          snapshot
	err           error
}

// actionKind names an operator action.
type actionKind string

const (
	actAcquire actionKind = "acquire"
	actRenew   actionKind = "renew"
	actExpire  actionKind = "force-expire"
	actRelease actionKind = "force-release"
)

// actionDoneMsg is the result of an action; seq matches the request.
type actionDoneMsg struct {
	seq   int
	kind  actionKind
	key   string
	token int64 // the token the operator acted on (0 for acquire)
	lease locker.Lease
	err   error
}
