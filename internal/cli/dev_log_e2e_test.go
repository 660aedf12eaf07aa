//go:build linux

package cli

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/require"

	"github.com/gleaner-hpc/gleaner/internal/testenv"
)

// A campaign whose trainer fails, under `gleaner dev`: the worker's error
// records (hundreds of characters, the trainer's log lines in them) stay
// whole in the log file, and the terminal gets one short line each.
func TestDevKeepsWorkerErrorsInItsLog(t *testing.T) {
	cli := testenv.SkipIfNoCLI(t)
	bin, _ := devBuild(t, t.TempDir())
	dir := t.TempDir()
	spec := filepath.Join(dir, "failing.yaml")
	require.NoError(t, os.WriteFile(spec, []byte(`name: dev-failing
command: ["/bin/sh", "-c", "echo 'Traceback (most recent call last):' >&2; echo 'ValueError: lr out of range' >&2; exit 3"]
space:
  - {name: lr, type: float, min: 0.05, max: 0.5, log: true}
objective: {metric: val_loss, mode: min}
budget: {max_trials: 2, max_concurrent: 2, max_failures: 2}
resources: {min_nodes: 1, max_nodes: 1}
trial: {grace_period: 5s, max_restarts: 1}
`), 0o644))
	logFile := filepath.Join(dir, "state", "dev.log")
	p := startDev(t, bin, dir, cli, "--exit-when-done",
		"--port", strconv.Itoa(freePort(t)), "--ui-port", strconv.Itoa(freePort(t)), "--db", "",
		"--data-dir", filepath.Join(dir, "data"), "--log-file", logFile,
		"--nodes", "static:2,gpus=none", "--campaign", spec, "--interval", "500ms")
	_ = p.wait(t, 3*time.Minute) // the campaign fails: so may the command

	require.Contains(t, p.out(), "gleaner dev: the worker's log: "+logFile)
	stderr := p.errOut()
	require.Contains(t, stderr, "gleaner dev: error: Activity error: trial t0000", "a short line per error")
	// The log's lines come before the campaign's failure, which names the
	// failed trials whole at the end.
	logged, failure, _ := strings.Cut(stderr, "gleaner: campaign dev-failing-")
	for _, line := range strings.Split(strings.TrimSuffix(logged, "\n"), "\n") {
		require.True(t, strings.HasPrefix(line, "gleaner dev: "), "a log record on the terminal: %q", line)
		require.LessOrEqual(t, utf8.RuneCountInString(line), devShortLineMax, "a long line on the terminal: %q", line)
		require.NotContains(t, line, "ValueError", "the trainer's log lines stay in the log file")
	}
	require.Contains(t, failure, "| ValueError: lr out of range", "the campaign's failure names its trials")
	b, err := os.ReadFile(logFile)
	require.NoError(t, err)
	require.Contains(t, string(b), "level=ERROR msg=\"Activity error.\"")
	require.Contains(t, string(b), "ValueError: lr out of range", "the log file has the records whole")
}
