package cli

import (
	"fmt"
	"runtime/debug"
	"strings"
)

// BuildVersion describes this binary from the build information Go embeds
// in it: the module version ("v1.4.0", or "(devel)" for a build from a
// checkout), the VCS revision and whether the tree was modified, and the Go
// version. A binary built with -buildvcs=false has no revision to show.
func BuildVersion() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "(unknown version: built without module information)"
	}
	return describeBuild(info)
}

func describeBuild(info *debug.BuildInfo) string {
	version := info.Main.Version
	if version == "" {
		version = "(devel)"
	}
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
	return fmt.Sprintf("%s, %s", version, strings.Join(parts, ", "))
}
