package cli

import (
	"fmt"
	"runtime/debug"
	"strings"
)

// version is `gleaner --version`: the module's version and the commit it
// was built from, as the Go toolchain stamped them into the binary.
func version() string {
	info, _ := debug.ReadBuildInfo()
	return formatVersion(info)
}

// formatVersion renders build info as one line: "gleaner v1.2.0" for a
// build of a tagged module (go install …@v1.2.0), "gleaner (devel) commit
// 95feeaa12345 (2026-11-28T21:40:00Z, modified)" for a build from a clone
// (the toolchain stamps the commit, its time and whether the tree had
// uncommitted changes; a clone past a release tag keeps its
// pseudo-version, v1.2.1-0.…), and the Go version it was built with.
func formatVersion(info *debug.BuildInfo) string {
	if info == nil {
		return "gleaner (unknown version: the binary carries no build information)"
	}
	settings := map[string]string{}
	for _, s := range info.Settings {
		settings[s.Key] = s.Value
	}
	v := info.Main.Version
	// A clone before any release tag gets v0.0.0-TIME-COMMIT[+dirty]
	// from the toolchain: the commit below says it all.
	if rev := settings["vcs.revision"]; v == "" || strings.HasPrefix(v, "v0.0.0-") && rev != "" && strings.Contains(v, rev[:min(len(rev), 12)]) {
		v = "(devel)"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "gleaner %s", v)
	if rev := settings["vcs.revision"]; rev != "" {
		fmt.Fprintf(&b, " commit %s", rev[:min(len(rev), 12)])
		var about []string
		if t := settings["vcs.time"]; t != "" {
			about = append(about, t)
		}
		if settings["vcs.modified"] == "true" {
			about = append(about, "modified")
		}
		if len(about) > 0 {
			fmt.Fprintf(&b, " (%s)", strings.Join(about, ", "))
		}
	} else if v == "(devel)" {
		b.WriteString(" (no commit recorded: built outside a clone, or with -buildvcs=false)")
	}
	if info.GoVersion != "" {
		fmt.Fprintf(&b, ", built with %s", info.GoVersion)
	}
	return b.String()
}
