package sdklog

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/temporal"
)

// recorder is a log.Logger that keeps "LEVEL msg" lines.
type recorder struct{ lines *[]string }

func (r recorder) log(level, msg string)            { *r.lines = append(*r.lines, level+" "+msg) }
func (r recorder) Debug(msg string, keyvals ...any) { r.log("DEBUG", msg) }
func (r recorder) Info(msg string, keyvals ...any)  { r.log("INFO", msg) }
func (r recorder) Warn(msg string, keyvals ...any)  { r.log("WARN", msg) }
func (r recorder) Error(msg string, keyvals ...any) { r.log("ERROR", msg) }

// The SDK's warning for a heartbeat answered "cancelled" is a debug line;
// other heartbeat errors, and other warnings, stay warnings.
func TestLoggerDemotesHeartbeatCancellations(t *testing.T) {
	var lines []string
	l := Logger(recorder{&lines})
	l.Warn(heartbeatError, "ActivityID", "7", "Error", temporal.NewCanceledError())
	l.Warn(heartbeatError, "Error", fmt.Errorf("wrapped: %w", temporal.NewCanceledError("details")))
	// The held-back one, sent as the activity ends: the gRPC call's error,
	// and the context's.
	l.Warn(heartbeatError, "Error", serviceerror.NewCanceled("context canceled"))
	l.Warn(heartbeatError, "Error", context.Canceled)
	l.Warn(heartbeatError, "Error", errors.New("connection refused"))
	l.Warn(heartbeatError, "Error", context.DeadlineExceeded)
	l.Warn("Activity error.", "Error", temporal.NewCanceledError())
	l.Info("started")
	require.Equal(t, []string{
		"DEBUG " + heartbeatError,
		"DEBUG " + heartbeatError,
		"DEBUG " + heartbeatError,
		"DEBUG " + heartbeatError,
		"WARN " + heartbeatError,
		"WARN " + heartbeatError,
		"WARN Activity error.",
		"INFO started",
	}, lines)
	require.Nil(t, Logger(nil))
	require.Equal(t, l, Logger(l), "wrapped once")
}

// Through the SDK's log.With, as the SDK tags its loggers, the keyvals
// still decide, and lines name their caller, not this package.
func TestLoggerKeepsWithAndCallers(t *testing.T) {
	var buf bytes.Buffer
	inner := log.NewStructuredLogger(slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug, AddSource: true})))
	l := log.With(Logger(inner), "ActivityID", "7")
	l.Warn(heartbeatError, "Error", temporal.NewCanceledError())
	l.Warn("plain warning")
	out := buf.String()
	lines := strings.Split(strings.TrimSpace(out), "\n")
	require.Len(t, lines, 2, out)
	for i, want := range []string{"level=DEBUG", "level=WARN"} {
		require.Contains(t, lines[i], want)
		require.Contains(t, lines[i], "ActivityID=7")
		require.Contains(t, lines[i], "sdklog_test.go:", "each line names its caller")
	}
	require.Contains(t, lines[0], heartbeatError)
	require.Contains(t, lines[1], "plain warning")
}
