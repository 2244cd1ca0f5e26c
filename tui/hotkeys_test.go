package tui

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/lockctl/lockctl/internal/testdb"
)

// hotLog is a log with a key waited for over the last 15 minutes, one
// stolen twice in the last minute and one waited for long 50 minutes ago.
func hotLog(t *testing.T) *pgxpool.Pool {
	t.Helper()
	pool := testdb.New(t)
	testdb.LogEvent(t, pool, 50*time.Minute, "old:hot", "stolen", 1, `{"waited_ms": 600000}`)
	testdb.LogEvent(t, pool, 10*time.Minute, "queue:a", "acquired", 2, `{"waited_ms": 4000}`)
	testdb.LogEvent(t, pool, 9*time.Minute, "queue:a", "released", 2, `{}`)
	testdb.LogEvent(t, pool, 30*time.Second, "queue:a", "acquired", 3, `{"waited_ms": 2000}`)
	testdb.LogEvent(t, pool, 20*time.Second, "steal:b", "stolen", 4, `{}`)
	testdb.LogEvent(t, pool, 19*time.Second, "steal:b", "stolen", 5, `{}`)
	return pool
}

// rowsOf are the lines of the screen between the hot keys' column titles
// and the end of the page's rows, trimmed.
func hotRowsOf(m Model) []string {
	var rows []string
	in := false
	for _, l := range strings.Split(screen(m), "\n") {
		switch {
		case strings.Contains(l, "KEY") && strings.Contains(l, "TOTAL WAIT"):
			in = true
		case in && strings.TrimSpace(l) == "":
			return rows
		case in:
			rows = append(rows, strings.Join(strings.Fields(strings.TrimPrefix(l, "▶")), " "))
		}
	}
	return rows
}

// h opens the hot keys page, whose polls rank the keys of the window on
// screen from the event log (and only while it is on screen): 15 minutes
// at first, w switches to the hour, s ranks by another column; enter
// opens the selected key's detail page, with its waits and holds over
// the same window; esc comes back to the page.
func TestHotKeysPageRanksTheWindow(t *testing.T) {
	pool := hotLog(t)
	m := dbModel(t, pool, Options{}, 120, 35)
	if m.pollRequest().HotKeys {
		t.Fatal("the table's polls rank the hot keys")
	}
	m, cmd := update(t, m, keyMsg("h"))
	if req := m.pollRequest(); !req.HotKeys || req.HotWindow != 15*time.Minute {
		t.Fatalf("the hot keys page's polls ask %+v; want the hot keys of 15m", req)
	}
	m = runPoll(t, m, cmd)
	if rows := hotRowsOf(m); len(rows) != 2 || !strings.HasPrefix(rows[0], "queue:a 6s ") || !strings.HasPrefix(rows[1], "steal:b 0 ") {
		t.Fatalf("15m by total wait: %q; want queue:a (6s) then steal:b\n%s", rows, screen(m))
	}
	if s := screen(m); !strings.Contains(s, "Hot keys — last 15m · ranked by total wait · 2 keys") ||
		!strings.Contains(s, "6s waited · 2 waits · 2 steals · 2 hand-offs · 0 forces") {
		t.Errorf("the title and totals:\n%s", s)
	}

	m, cmd = update(t, m, keyMsg("w"))
	m = runPoll(t, m, cmd)
	if rows := hotRowsOf(m); len(rows) != 3 || !strings.HasPrefix(rows[0], "old:hot 10m00s ") {
		t.Fatalf("the hour: %q; want old:hot first, its 10 minutes waited\n%s", rows, screen(m))
	}
	m, cmd = update(t, m, keyMsg("s")) // waits
	m = runPoll(t, m, cmd)
	m, cmd = update(t, m, keyMsg("s")) // steals
	m = runPoll(t, m, cmd)
	if rows := hotRowsOf(m); len(rows) != 3 || !strings.HasPrefix(rows[0], "steal:b ") || !strings.Contains(screen(m), "ranked by steals") {
		t.Fatalf("the hour by steals: %q; want steal:b first\n%s", rows, screen(m))
	}

	m = press(t, m, "j", "j") // queue:a, third by steals
	m, cmd = update(t, m, keyMsg("enter"))
	if req := m.pollRequest(); req.DetailKey != "queue:a" || req.HotWindow != time.Hour {
		t.Fatalf("enter's polls ask %+v; want queue:a's detail over the hour", req)
	}
	m = runPoll(t, m, cmd)
	s := screen(m)
	if !strings.Contains(s, "Waits and holds — last 1h") || !strings.Contains(screenLine(m, "  wait "), "p50 2s") ||
		!strings.Contains(screenLine(m, "  wait "), "p99 4s") || !strings.Contains(screenLine(m, "  wait "), "2 acquires") {
		t.Errorf("queue:a's detail lacks its waits over the hour (p50 2s, p99 4s of 2):\n%s", s)
	}
	if !strings.Contains(screenLine(m, "  hold "), "p50 1m00s") {
		t.Errorf("queue:a's detail lacks its hold of a minute:\n%s", s)
	}
	m = press(t, m, "esc")
	if !strings.Contains(screen(m), "ranked by steals") || !strings.HasPrefix(hotRowsOf(m)[2], "queue:a") {
		t.Fatalf("esc did not come back to the hot keys:\n%s", screen(m))
	}
}

// E on the hot keys page writes the keys ranked, in the page's order,
// with the window and every count.
func TestExportHotKeys(t *testing.T) {
	pool := hotLog(t)
	m := dbModel(t, pool, Options{Export: true}, 120, 35)
	m, cmd := update(t, m, keyMsg("h"))
	m = runPoll(t, m, cmd)
	path := filepath.Join(t.TempDir(), "hot.csv")
	m = exportTo(t, m, path)
	recs := readCSVFile(t, path)
	if len(recs) != 3 || strings.Join(recs[0], ",") != "lock_key,window_ms,total_wait_ms,waits,steals,handoffs,forces" {
		t.Fatalf("hot.csv: %q (%s)", recs, m.flash.text)
	}
	if strings.Join(recs[1], ",") != "queue:a,900000,6000,2,0,2,0" || strings.Join(recs[2], ",") != "steal:b,900000,0,0,2,0,0" {
		t.Errorf("hot.csv rows: %q", recs[1:])
	}
}
