package tui

import (
	"encoding/csv"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lockctl/lockctl/internal/testdb"
)

// exportTo presses E, replaces the proposed file name with path and
// presses enter; it returns the console with the export's result applied.
func exportTo(t *testing.T, m Model, path string) Model {
	t.Helper()
	m = press(t, m, "E")
	if m.export == nil {
		t.Fatalf("E opened no prompt:\n%s", screen(m))
	}
	p := *m.export
	p.input.SetValue(path)
	m.export = &p
	m, cmd := update(t, m, keyMsg("enter"))
	if cmd == nil {
		t.Fatalf("enter wrote nothing:\n%s", screen(m))
	}
	return step(t, m, cmd())
}

func readCSVFile(t *testing.T, path string) [][]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	recs, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatalf("%s is no CSV: %v", path, err)
	}
	return recs
}

// E on the table writes every lock the filter matches, in the sort on
// screen, not only the rows the window shows: each with its state and the
// readers' columns; text a spreadsheet would run is guarded. The message
// line says how many rows went where.
func TestExportTheTableAsFilteredAndSorted(t *testing.T) {
	pool := testdb.New(t)
	for i := range 60 {
		acquire(t, pool, "job:"+string(rune('a'+i/26))+string(rune('a'+i%26)), "worker", time.Duration(60+i)*time.Second)
	}
	acquire(t, pool, "=HYPERLINK(\"http://evil\")", "job-owner", time.Minute)
	acquire(t, pool, "other:key", "someone", time.Minute)
	m := dbModel(t, pool, Options{Export: true}, 100, 20)
	m = press(t, m, "/", "j", "o", "b", "enter", "s") // filter "job", sort by TTL
	m.inflight, m.pending = false, false              // the replies to the queries typed on the way came back meanwhile
	m = runPoll(t, m, m.requestPoll())
	prompt := screen(press(t, m, "E"))
	if !strings.Contains(prompt, `Export the 61 locks matching "job", sorted by TTL`) || !strings.Contains(prompt, "lockctl-locks-") {
		t.Fatalf("the prompt:\n%s", prompt)
	}
	path := filepath.Join(t.TempDir(), "locks.csv")
	m = exportTo(t, m, path)
	if !strings.Contains(m.flash.text, "✓ wrote 61 rows of locks to "+path) {
		t.Fatalf("message %q", m.flash.text)
	}
	recs := readCSVFile(t, path)
	header := strings.Join(recs[0], ",")
	if !strings.HasPrefix(header, "lock_key,owner_id,fence_token,expires_at,ttl_ms,") || !strings.Contains(header, ",waiters,") ||
		!strings.HasSuffix(header, ",state,holders") {
		t.Fatalf("header %q", header)
	}
	if len(recs) != 62 {
		t.Fatalf("%d rows; want the 61 locks matching the filter, the window's and the rest", len(recs)-1)
	}
	// Sorted by TTL, the soonest expiring first: job:aa (1m) first and
	// job:ch (1m59s) last, where the key order would put the formula's key
	// first.
	if recs[1][0] != "job:aa" || recs[61][0] != "job:ch" {
		t.Errorf("first row %q, last %q; want job:aa and job:ch", recs[1][0], recs[61][0])
	}
	guarded := false
	for _, r := range recs[1:] {
		if r[0] == "other:key" {
			t.Error("a lock the filter leaves out was exported")
		}
		guarded = guarded || r[0] == `'=HYPERLINK("http://evil")`
	}
	if !guarded {
		t.Error("the key a spreadsheet would run is not written with a leading '")
	}
}

// A .json name writes one array of objects; a name without .csv or .json
// is refused in the prompt, which stays open; an existing file is never
// overwritten.
func TestExportFormatsAndRefusals(t *testing.T) {
	pool := testdb.New(t)
	acquire(t, pool, "billing:nightly", "worker-1", time.Minute)
	m := dbModel(t, pool, Options{Export: true}, 120, 35)
	dir := t.TempDir()
	m = exportTo(t, m, filepath.Join(dir, "locks.json"))
	b, err := os.ReadFile(filepath.Join(dir, "locks.json"))
	if err != nil {
		t.Fatal(err)
	}
	var rows []map[string]any
	if err := json.Unmarshal(b, &rows); err != nil || len(rows) != 1 || rows[0]["lock_key"] != "billing:nightly" || rows[0]["state"] != "held" {
		t.Fatalf("locks.json: %v, %s", err, b)
	}
	if info, err := os.Stat(filepath.Join(dir, "locks.json")); err != nil || info.Mode().Perm() != 0o600 {
		t.Errorf("the export's mode: %v, %v; want 0600", info.Mode(), err)
	}

	m = press(t, m, "E")
	p := *m.export
	p.input.SetValue(filepath.Join(dir, "locks.txt"))
	m.export = &p
	m = press(t, m, "enter")
	if m.export == nil || !strings.Contains(screen(m), "end the name in .csv or .json") {
		t.Fatalf("a .txt name:\n%s", screen(m))
	}
	m = press(t, m, "esc")

	if err := os.WriteFile(filepath.Join(dir, "mine.csv"), []byte("keep me"), 0o600); err != nil {
		t.Fatal(err)
	}
	m = exportTo(t, m, filepath.Join(dir, "mine.csv"))
	if kept, _ := os.ReadFile(filepath.Join(dir, "mine.csv")); string(kept) != "keep me" || !strings.Contains(m.flash.text, "exists") {
		t.Fatalf("an existing file: message %q, content %q", m.flash.text, kept)
	}
}

// The event log exports the events the page holds, newest first, in the
// event reader's columns; the blocking page every wait, with whether its
// waiter is in a deadlock.
func TestExportEventsAndWaits(t *testing.T) {
	states := consoleStates(ThemeAuto)
	dir := t.TempDir()
	m := states["events"](t, 120, 35)
	m.opts.Export = true
	m.keys.Export.SetEnabled(true)
	m = exportTo(t, m, filepath.Join(dir, "events.csv"))
	recs := readCSVFile(t, filepath.Join(dir, "events.csv"))
	if len(recs) != 7 || !strings.HasPrefix(strings.Join(recs[0], ","), "event_id,occurred_at,lock_key,kind,owner_id,fence_token,actor,") {
		t.Fatalf("events.csv: %q (%s)", recs, m.flash.text)
	}
	if recs[1][0] != "9" || recs[1][3] != "force_expired" || recs[3][2] != "evil\x1b]2;owned\x07" {
		t.Errorf("events.csv rows: %q; want newest first, text exact", recs[1:])
	}

	m = states["blocking"](t, 120, 35)
	m.opts.Export = true
	m.keys.Export.SetEnabled(true)
	m = exportTo(t, m, filepath.Join(dir, "waits.csv"))
	recs = readCSVFile(t, filepath.Join(dir, "waits.csv"))
	if strings.Join(recs[0], ",") != "waiter,lock_key,holders,waited_ms,key_state,in_deadlock" || len(recs) != 7 {
		t.Fatalf("waits.csv: %q", recs)
	}
	deadlocked := 0
	for _, r := range recs[1:] {
		if r[5] == "true" {
			deadlocked++
		}
	}
	if deadlocked != 2 {
		t.Errorf("%d waits marked in a deadlock; want the 2 of the cycle:\n%q", deadlocked, recs)
	}
}

// Without Options.Export (the console over SSH) E writes nothing, and the
// help does not offer it; on a page with no rows to write it says so.
func TestExportOnlyWhereOffered(t *testing.T) {
	m := withSnapshot(t, testModel(t, Options{}, 120, 35), fixtureSnapshot())
	if m = press(t, m, "E"); m.export != nil || strings.Contains(screen(press(t, m, "?")), "export this page") {
		t.Fatal("E offered without Options.Export")
	}
	m = withSnapshot(t, testModel(t, Options{Export: true}, 120, 35), fixtureSnapshot())
	m = press(t, m, "?", "E")
	if m.export != nil || !strings.Contains(m.flash.text, "nothing to export") {
		t.Fatalf("E on the help page: prompt %v, message %q", m.export != nil, m.flash.text)
	}
}
