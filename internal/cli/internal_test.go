package cli

import (
	"runtime/debug"
	"strings"
	"testing"
)

func TestDescribeBuild(t *testing.T) {
	info := &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "v1.4.0"},
		Settings: []debug.BuildSetting{
			{Key: "vcs.revision", Value: "0123456789abcdef"},
			{Key: "vcs.time", Value: "2026-12-03T17:00:00Z"},
			{Key: "vcs.modified", Value: "true"},
		}}
	want := "v1.4.0, revision 0123456789abcdef (2026-12-03T17:00:00Z), modified, built with go1.26.8"
	if got := describeBuild(info); got != want {
		t.Errorf("describeBuild = %q; want %q", got, want)
	}
	bare := &debug.BuildInfo{GoVersion: "go1.26.8"}
	if got, want := describeBuild(bare), "(devel), revision unknown, built with go1.26.8"; got != want {
		t.Errorf("describeBuild without VCS = %q; want %q", got, want)
	}
}

// With no --dsn, no $DATABASE_URL and no PG* variable, the hint says how
// to name a server.
func TestNoDSNHint(t *testing.T) {
	none := noDSNHint(func(string) string { return "" })
	for _, want := range []string{"--dsn", "$DATABASE_URL", "PGHOST"} {
		if !strings.Contains(none, want) {
			t.Errorf("hint without any connection setting = %q; want it to mention %s", none, want)
		}
	}
	some := noDSNHint(func(k string) string {
		if k == "PGPORT" {
			return "5433"
		}
		return ""
	})
	if !strings.Contains(some, "came from PGPORT") {
		t.Errorf("hint with PGPORT set = %q; want it to name PGPORT", some)
	}
}
