package cli

import (
	"fmt"
	"runtime/debug"
	"strings"
)

// ReleaseVersion is the version of lockctl this source is: the newest one
// CHANGELOG.md names (a docs test holds the two together). A build from a
// checkout past it says so with its revision, which names the commit.
const ReleaseVersion = "v0.1.0"

// BuildVersion describes this binary: its release, then from the build
// information Go embeds the VCS revision and whether the tree was
// modified, and the Go version. A binary built with -buildvcs=false has no
// revision to show.
func BuildVersion() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return ReleaseVersion + ", built without module information"
	}
	return describeBuild(info)
}

func describeBuild(info *debug.BuildInfo) string {
	settings := map[string]string{}
	for _, s := range info.Settings {
		settings[s.Key] = s.Value
	}
	var parts []string
	if rev := settings["vcs.revision"]; rev != "" {
		r := "revision " + rev
		if t := settings["vcs.time"]; t != "" {
			r += " (" + t + ")"
		}
		if settings["vcs.modified"] == "true" {
			r += ", modified"
		}
		parts = append(parts, r)
	} else {
		parts = append(parts, "revision unknown")
	}
	parts = append(parts, "built with "+info.GoVersion)
	return fmt.Sprintf("%s, %s", ReleaseVersion, strings.Join(parts, ", "))
}
