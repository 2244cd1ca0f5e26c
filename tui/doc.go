// Package tui is lockctl's console: a Bubble Tea program that watches the
// distributed_lock table live and lets an operator acquire, renew,
// force-expire and force-release locks through package locker.
//
// How it stays responsive on a large table and a bad network:
//
//   - Each poll reads only a window of rows around the selection
//     (lockview.ListLocks) plus totals computed in SQL, whatever the table size.
//   - Polls never overlap. Each has a timeout, carries a sequence number
//     (replies to an older query are dropped) and re-arms the next poll with
//     tea.Tick only when it returns; a generation counter retires ticks armed
//     under an older interval. Failures back off and the last good snapshot
//     stays on screen, marked stale with its age.
//   - Remaining TTLs come from the database clock (computed in the poll) and
//     count down between polls on this process's monotonic clock, measured
//     from the moment the poll's reply arrived; the terminal's wall clock is
//     never consulted.
//
// How it is built: the root model (app.go, update.go) owns what every page
// shares — the size, the connection (link.go), the poller (poller.go), the
// header, the action dialogs and the message line — and routes messages to
// the page on screen. Each page is a Component (page.go) in its own file
// set: the locks table (locks.go, table.go, nav.go), one lock's detail
// (detail.go; detailholders.go lists a shared or semaphore key's holders,
// groups.go says how such a key reads, detailtimes.go draws its waits and
// holds), the event log (events.go), who waits for whom (blocking.go,
// blockinglines.go, blockingnav.go), the hot keys (hotkeys.go,
// hotkeyslines.go), the sessions (sessions.go) and the help
// (helpview.go). A page adds what it needs to each poll
// (askPoll), takes its part of the snapshot, and asks the root for a poll
// or a message through its outbox.
// Polls go through a Source (source.go): NewPoolSource reads the database,
// and keeps the last hour's waits and holds in a hotkeys.Tracker for the
// hot keys and the detail page's times; several consoles may share one.
//
// Around the pages: the context picker (contexts.go, picker.go) moves the
// whole console to another database by swapping the connection under the
// root and starting the pages afresh (sequence numbers drop what the old
// one still answers); the export prompt (export.go) writes the page on
// screen to a file, each page offering its rows through the exporter
// interface (pageexports.go); the palette (styles.go) is dark or light,
// picked by the terminal's background or Options.Theme, and is the only
// place colours are chosen.
//
// All I/O happens in tea.Cmds (commands.go) on values copied before the
// closure; Update only changes the model. Text from the database passes
// through textsafe.Escape before it is drawn.
package tui
