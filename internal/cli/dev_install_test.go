//go:build linux

package cli

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gleaner-hpc/gleaner/internal/testenv"
)

// An installed gleaner (go install, no checkout, no Go toolchain needed at
// run time) runs the whole demo from any directory: the built-in Summit
// trace takes nodes away and gives them back, the built-in campaign trains
// with the example trainer inside the binary, and the state lands in the
// user's state directory, not in the working directory.
func TestInstalledBinaryRunsTheDemo(t *testing.T) {
	cli := testenv.SkipIfNoCLI(t)
	gobin := t.TempDir()
	install := exec.Command("go", "install", "github.com/gleaner-hpc/gleaner/cmd/gleaner")
	install.Env = append(os.Environ(), "GOBIN="+gobin)
	out, err := install.CombinedOutput()
	require.NoError(t, err, "go install:\n%s", out)
	bin := filepath.Join(gobin, "gleaner")

	home, work := t.TempDir(), t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("XDG_STATE_HOME", "")
	// Nothing from the checkout: no Go toolchain on PATH either.
	t.Setenv("PATH", "/usr/bin:/bin")
	port, uiPort := freePort(t), freePort(t)
	p := startDev(t, bin, work, cli, "--exit-when-done", "--port", strconv.Itoa(port), "--ui-port", strconv.Itoa(uiPort), "--interval", "1s")
	require.NoError(t, p.wait(t, 8*time.Minute), "gleaner dev exits 0; stderr:\n%s", p.errOut())

	got := p.out()
	require.Contains(t, got, "(the built-in examples/go-mlp/campaign.yaml): 20 trials")
	require.Contains(t, got, "its trainer, bin/go-mlp: the Go example trainer built into "+bin+" (gleaner example-trainer)")
	require.Contains(t, got, "nodes replay:embedded:traces/summit-idle-2021-02-10_14.csv")
	require.Regexp(t, `campaign go-mlp-spirals-\d{8}-\d{6} completed after .*: 20 completed, 0 stopped, 0 failed`, got)
	require.Contains(t, got, "leaderboard (top")
	// The trace took nodes back while trials ran: a slot that ran a trial
	// or sat idle (# or o) in one node map is taken back (.) in a later one.
	require.True(t, slotTakenBack(got), "no node was taken back during the demo:\n%s", got)
	state := filepath.Join(home, ".local", "state", "gleaner")
	require.FileExists(t, filepath.Join(state, "dev", "temporal.db"))
	require.DirExists(t, filepath.Join(state, "data"))
	left, err := os.ReadDir(work)
	require.NoError(t, err)
	require.Empty(t, left, "the demo wrote into its working directory")
}

// slotTakenBack reports whether, in the progress lines of out, a slot
// shown running or idle (# or o) is shown taken back (.) later.
func slotTakenBack(out string) bool {
	var seen []bool // a slot was # or o
	for _, line := range strings.Split(out, "\n") {
		i := strings.Index(line, "| nodes ")
		if i < 0 {
			continue
		}
		m := strings.Fields(line[i+len("| nodes "):])[0]
		if m == "-" {
			continue
		}
		seen = append(seen, make([]bool, max(0, len(m)-len(seen)))...)
		for j, c := range m {
			switch c {
			case '#', 'o':
				seen[j] = true
			case '.':
				if seen[j] {
					return true
				}
			}
		}
	}
	return false
}

func TestSlotTakenBack(t *testing.T) {
	require.False(t, slotTakenBack("  0:01 x | nodes ##o. 3 idle\n  0:02 x | nodes #o#. 3 idle\n"), "a slot always taken back")
	require.True(t, slotTakenBack("  0:01 x | nodes - (the pool is starting)\n  0:02 x | nodes ##o. 3 idle\n  0:03 x | nodes #.o. 2 idle\n"))
}

// The built-in trainer is go-mlp: without a trial's environment it exits 1
// naming what is missing, and gleaner adds no message of its own.
func TestExampleTrainerSubcommand(t *testing.T) {
	var out, errOut bytes.Buffer
	err := Run([]string{ExampleTrainerCommand, "ignored", "--also-ignored"}, &out, &errOut)
	require.Equal(t, 1, ExitCode(err), "%v", err)
	require.Contains(t, errOut.String(), "go-mlp: ")
	require.NotContains(t, errOut.String(), "gleaner: ")
}
