package cli

import (
	"bytes"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/log"
)

// A worker's error, as the SDK logs a failed trainer's activity (~400
// characters and the log's last lines), is whole in the log file and one
// short line on the terminal; a warning only in the file.
func TestDevLogKeepsRecordsInTheFile(t *testing.T) {
	var file, term bytes.Buffer
	logger := log.NewStructuredLogger(slog.New(newDevLogHandler(&file, &term, slog.LevelWarn)))
	failure := "trial t00003: trainer exited with exit code 3 (log: /home/me/.local/state/gleaner/data/dev-demo-20261128-221300/t00003/runs/1/trainer.log); trial.max_restarts: 3 reached\n" +
		"| Traceback (most recent call last):\n| ValueError: lr out of range (type: TrainerFailed, retryable: false)"
	log.With(logger, "Namespace", "default", "TaskQueue", "gleaner-dev", "WorkerID", "1234@host@").
		Error("Activity error.", "WorkflowID", "gleaner-campaign-dev-demo-20261128-221300-trial-00003",
			"RunID", "01a2244f-4b4d-7e0c-9c8a-3fbbd1e9d4f2", "ActivityType", "gleaner.RunTrial", "Attempt", 4, "Error", failure)
	logger.Warn("trial failed", "trial", "t00003")
	logger.Info("chatty")

	require.Contains(t, file.String(), "level=ERROR msg=\"Activity error.\"")
	require.Contains(t, file.String(), "ValueError: lr out of range", "the file has the record whole")
	require.Contains(t, file.String(), "level=WARN msg=\"trial failed\" trial=t00003")
	require.NotContains(t, file.String(), "chatty", "below --log-level")

	lines := strings.Split(strings.TrimSuffix(term.String(), "\n"), "\n")
	require.Len(t, lines, 1, "one short line on the terminal: %q", term.String())
	require.Equal(t, "gleaner dev: error: Activity error: trial t00003: trainer exited with exit code 3 (log: /home/me/.local/state/gleaner/data/dev-demo-20261128-221300/t00003/runs…", lines[0])
	require.LessOrEqual(t, len([]rune(lines[0])), devShortLineMax)

	// The error may come with the logger (With).
	term.Reset()
	slog.New(newDevLogHandler(&file, &term, slog.LevelError)).With("error", "server unavailable").Error("polling failed")
	require.Equal(t, "gleaner dev: error: polling failed: server unavailable\n", term.String())
}

func TestOpenDevLog(t *testing.T) {
	var stderr bytes.Buffer
	w, closeLog, err := openDevLog("-", &stderr)
	require.NoError(t, err)
	require.Same(t, &stderr, w)
	closeLog()

	path := filepath.Join(t.TempDir(), "state", "dev", devLogFile)
	for _, line := range []string{"one\n", "two\n"} {
		w, closeLog, err = openDevLog(path, &stderr)
		require.NoError(t, err)
		_, err = w.Write([]byte(line))
		require.NoError(t, err)
		closeLog()
	}
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, "one\ntwo\n", string(b), "appended, its directory made")
}
