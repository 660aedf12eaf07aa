package cli

import (
	"runtime/debug"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestFormatVersion(t *testing.T) {
	vcs := func(kv ...string) []debug.BuildSetting {
		var s []debug.BuildSetting
		for i := 0; i < len(kv); i += 2 {
			s = append(s, debug.BuildSetting{Key: kv[i], Value: kv[i+1]})
		}
		return s
	}
	for _, c := range []struct {
		info *debug.BuildInfo
		want string
	}{
		{&debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "v1.2.0"}},
			"gleaner v1.2.0, built with go1.26.8"},
		{&debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "(devel)"}, Settings: vcs(
			"vcs", "git", "vcs.revision", "95feeaa0123456789abcdef0123456789abcdef0", "vcs.time", "2026-11-28T21:40:00Z", "vcs.modified", "true")},
			"gleaner (devel) commit 95feeaa01234 (2026-11-28T21:40:00Z, modified), built with go1.26.8"},
		{&debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "(devel)"}, Settings: vcs(
			"vcs.revision", "95feeaa0123456789abcdef0123456789abcdef0", "vcs.modified", "false")},
			"gleaner (devel) commit 95feeaa01234, built with go1.26.8"},
		// Go 1.24+ stamps a pseudo-version on a build from a clone.
		{&debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "v0.0.0-20261128225248-95feeaa01234+dirty"}, Settings: vcs(
			"vcs.revision", "95feeaa0123456789abcdef0123456789abcdef0", "vcs.time", "2026-11-28T22:52:48Z", "vcs.modified", "true")},
			"gleaner (devel) commit 95feeaa01234 (2026-11-28T22:52:48Z, modified), built with go1.26.8"},
		{&debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "v1.2.1-0.20261128225248-95feeaa01234"}, Settings: vcs(
			"vcs.revision", "95feeaa0123456789abcdef0123456789abcdef0")},
			"gleaner v1.2.1-0.20261128225248-95feeaa01234 commit 95feeaa01234, built with go1.26.8"},
		{&debug.BuildInfo{GoVersion: "go1.26.8"},
			"gleaner (devel) (no commit recorded: built outside a clone, or with -buildvcs=false), built with go1.26.8"},
		{nil, "gleaner (unknown version: the binary carries no build information)"},
	} {
		require.Equal(t, c.want, formatVersion(c.info))
	}
}

// --version prints one line on stdout and exits 0; so does -v.
func TestVersionFlag(t *testing.T) {
	for _, flag := range []string{"--version", "-v"} {
		out, errOut, code := cliRun(t, flag)
		require.Equal(t, ExitOK, code)
		require.Empty(t, errOut)
		require.True(t, strings.HasPrefix(out, "gleaner "), out)
		require.Equal(t, version()+"\n", out)
	}
}
