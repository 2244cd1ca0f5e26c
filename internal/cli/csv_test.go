package cli_test

import (
	"encoding/csv"
	"encoding/json"
	"strings"
	"testing"
)

// readCSV parses r's stdout as CSV: the header, then the rows as maps by
// column.
func readCSV(t *testing.T, r result) (header []string, rows []map[string]string) {
	t.Helper()
	recs, err := csv.NewReader(strings.NewReader(r.stdout)).ReadAll()
	if err != nil || len(recs) == 0 {
		t.Fatalf("stdout is no CSV with a header: %v\n%s", err, r)
	}
	for _, rec := range recs[1:] {
		row := map[string]string{}
		for i, name := range recs[0] {
			row[name] = rec[i]
		}
		rows = append(rows, row)
	}
	return recs[0], rows
}

// ls --csv has a header, then a line per lock in key order, every column of
// the row as lockview reads it: its state, times in UTC, durations in
// milliseconds, metadata and a shared key's holders as JSON. Database text
// that a spreadsheet would run gets a leading '; anything else is exact.
func TestLsCSV(t *testing.T) {
	t.Parallel()
	d := newDB(t)
	header, rows := readCSV(t, d.expect(0, "ls", "--csv"))
	if len(rows) != 0 || !strings.HasPrefix(strings.Join(header, ","), "lock_key,owner_id,fence_token,expires_at,ttl_ms,") {
		t.Fatalf("ls --csv of an empty table: header %q, rows %v", header, rows)
	}
	held, expired, free := makeStates(t, d)
	d.expect(0, "acquire", "=cmd|' /C calc'!A0", "--owner", "@evil,\"quoted\"\nowner", "--ttl", "1m")
	d.expect(0, "acquire", "readers", "--shared", "--owner", "r1", "--ttl", "1m")
	header, rows = readCSV(t, d.expect(0, "ls", "--csv"))
	for _, col := range []string{"lock_key", "owner_id", "fence_token", "state", "remaining_ms", "held_for_ms",
		"expires_at", "metadata", "lock_mode", "holders"} {
		if !strings.Contains(","+strings.Join(header, ",")+",", ","+col+",") {
			t.Errorf("ls --csv has no column %s: %q", col, header)
		}
	}
	byKey := map[string]map[string]string{}
	var keys []string
	for _, r := range rows {
		byKey[r["lock_key"]] = r
		keys = append(keys, r["lock_key"])
	}
	if got := strings.Join(keys, " "); got != "'=cmd|' /C calc'!A0 a-held b-expired c-free readers" {
		t.Fatalf("ls --csv keys = %q; want every key in key order, the formula guarded", got)
	}
	for key, want := range map[string]struct {
		state string
		token int64
	}{"a-held": {"held", held.Token}, "b-expired": {"expired", expired.Token}, "c-free": {"free", free.Token}} {
		r := byKey[key]
		if r["state"] != want.state || r["fence_token"] != tokenArg(want.token) {
			t.Errorf("%s: %v; want state %s, token %d", key, r, want.state, want.token)
		}
	}
	if r := byKey["a-held"]; r["ttl_ms"] != "60000" || !strings.HasSuffix(r["expires_at"], "Z") || r["holders"] != "" {
		t.Errorf("a-held: ttl_ms %q, expires_at %q, holders %q; want 60000, a UTC time, no holders", r["ttl_ms"], r["expires_at"], r["holders"])
	}
	if r := byKey["'=cmd|' /C calc'!A0"]; r["owner_id"] != "'@evil,\"quoted\"\nowner" {
		t.Errorf("owner written as %q; want the exact text after a '", r["owner_id"])
	}
	var holders []map[string]any
	if err := json.Unmarshal([]byte(byKey["readers"]["holders"]), &holders); err != nil ||
		len(holders) != 1 || holders[0]["owner_id"] != "r1" || byKey["readers"]["lock_mode"] != "shared" {
		t.Errorf("readers: holders %q (%v), mode %q; want r1's lease as JSON", byKey["readers"]["holders"], err, byKey["readers"]["lock_mode"])
	}
	if !json.Valid([]byte(byKey["a-held"]["metadata"])) {
		t.Errorf("metadata %q is not JSON", byKey["a-held"]["metadata"])
	}
	// --state and --prefix filter it as they filter the table.
	if _, rows := readCSV(t, d.expect(0, "ls", "--csv", "--state", "expired")); len(rows) != 1 || rows[0]["lock_key"] != "b-expired" {
		t.Errorf("ls --csv --state expired = %v; want b-expired", rows)
	}
}

// events --csv: a header of the event reader's columns, then an event a
// line, oldest first, as events prints them.
func TestEventsCSV(t *testing.T) {
	t.Parallel()
	d := newDB(t)
	header, rows := readCSV(t, d.expect(0, "events", "--csv"))
	if len(rows) != 0 || !strings.HasPrefix(strings.Join(header, ","), "event_id,occurred_at,lock_key,kind,owner_id,fence_token,actor,") {
		t.Fatalf("events --csv of an empty log: header %q, rows %v", header, rows)
	}
	first := d.json(0, "acquire", "k", "--owner", "a", "--ttl", "1m")
	d.json(0, "expire", "k", "--actor", "-ops")
	_, rows = readCSV(t, d.expect(0, "events", "k", "--csv"))
	if len(rows) != 2 || rows[0]["kind"] != "acquired" || rows[1]["kind"] != "force_expired" {
		t.Fatalf("events k --csv = %v; want acquired, force_expired", rows)
	}
	if rows[0]["fence_token"] != tokenArg(first.Token) || rows[0]["owner_id"] != "a" || !strings.HasSuffix(rows[0]["occurred_at"], "Z") {
		t.Errorf("acquired: %v", rows[0])
	}
	if rows[1]["actor"] != "'-ops" {
		t.Errorf("actor written as %q; want the guarded '-ops", rows[1]["actor"])
	}
}

// --csv and --json together are a usage error, before connecting.
func TestCSVAndJSONAreExclusive(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{{"ls", "--csv", "--json"}, {"events", "--json", "--csv"}, {"ls", "--csv", "--watch"}} {
		r := run(t, append(args, "--dsn", "postgres://nobody@127.0.0.1:1/none")...)
		if r.code != 2 || r.stdout != "" || !strings.Contains(r.stderr, "--csv") {
			t.Errorf("lockctl %s: %s\nwant exit 2 naming --csv", strings.Join(args, " "), r)
		}
	}
}
