package cli

import (
	"runtime/debug"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
)

func TestDescribeBuild(t *testing.T) {
	info := &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "v0.1.1-0.20261203170000-0123456789ab+dirty"},
		Settings: []debug.BuildSetting{
			{Key: "vcs.revision", Value: "0123456789abcdef"},
			{Key: "vcs.time", Value: "2026-12-03T17:00:00Z"},
			{Key: "vcs.modified", Value: "true"},
		}}
	want := "v0.1.0, revision 0123456789abcdef (2026-12-03T17:00:00Z), modified, built with go1.26.8"
	if got := describeBuild(info); got != want {
		t.Errorf("describeBuild = %q; want %q", got, want)
	}
	bare := &debug.BuildInfo{GoVersion: "go1.26.8"}
	if got, want := describeBuild(bare), "v0.1.0, revision unknown, built with go1.26.8"; got != want {
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

// A multi-host DSN is named with every host, once each (sslmode=prefer
// gives pgx two fallbacks per host), in the order pgx tries them, both in
// the console's server name and in a connect error.
func TestMultiHostNames(t *testing.T) {
	cfg, err := pgx.ParseConfig("postgres://app:sekrit@db1:5432,db2:5433/locks?sslmode=prefer")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := ServerName(cfg), "db1:5432,db2:5433/locks"; got != want {
		t.Errorf("ServerName = %q; want %q", got, want)
	}
	if got, want := describeTarget(cfg), "db1:5432,db2:5433, database locks, user app"; got != want {
		t.Errorf("describeTarget = %q; want %q", got, want)
	}
}
