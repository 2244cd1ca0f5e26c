// Package lockview is what the console, `lockctl ls` and the metrics read
// about locks: windows of the lock table in the console's sort orders, the
// table's totals by state, grant rates, events for display and live
// waiters. It only reads; every write goes through package locker.
//
// Each function takes a store.DBTX and reads times from the database's
// clock, as store does. The window reads never sort the table (see Sort):
// a poll costs about the same at row 10 and at row 90,000. What costs a
// pass over the table (the counts, the window of an order without an
// index) is taken only when due, scaled to what it cost, and kept in
// between with its age (Counts, Order).
package lockview
