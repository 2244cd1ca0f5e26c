// Package hotkeys is where the time goes, key by key, over the last hour:
// the console's hot keys page (which keys cost the most waiting, and
// steals, hand-offs and force actions) and its detail pane's wait and hold
// percentiles. Both are computed from the event log's measures
// (lockview.ReadMeasures), as `lockctl metrics`'s histograms are.
//
// One SQL aggregation over a million events takes longer than a console
// can wait each refresh, so a Tracker keeps the last hour in memory,
// compact (twelve bytes an event, keys interned), in 3-second slices, and
// each refresh reads only the events logged since the last (by event_id,
// through the primary key). Its first refresh finds the hour's first
// event through the BRIN index on occurred_at and reads the hour in
// batches, a budget per refresh, saying meanwhile how far it got. A
// ranking or a key's percentiles is then a pass over the window's events
// in memory.
package hotkeys
