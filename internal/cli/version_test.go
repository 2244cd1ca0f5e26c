package cli

import (
	"runtime/debug"
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
