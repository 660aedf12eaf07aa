package client

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
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
func TestSDKLoggerDemotesHeartbeatCancellations(t *testing.T) {
	var lines []string
	l := SDKLogger(recorder{&lines})
	l.Warn(sdkHeartbeatError, "ActivityID", "7", "Error", temporal.NewCanceledError())
	l.Warn(sdkHeartbeatError, "Error", fmt.Errorf("wrapped: %w", temporal.NewCanceledError("details")))
	l.Warn(sdkHeartbeatError, "Error", errors.New("connection refused"))
	l.Warn("Activity error.", "Error", temporal.NewCanceledError())
	l.Info("started")
	require.Equal(t, []string{
		"DEBUG " + sdkHeartbeatError,
		"DEBUG " + sdkHeartbeatError,
		"WARN " + sdkHeartbeatError,
		"WARN Activity error.",
		"INFO started",
	}, lines)
	require.Nil(t, SDKLogger(nil))
	require.Equal(t, l, SDKLogger(l), "wrapped once")
}
