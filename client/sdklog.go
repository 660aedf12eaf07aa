package client

import (
	"errors"

	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/temporal"
)

// sdkHeartbeatError is what the Temporal SDK logs, at warning level, for
// every activity heartbeat the server answers with an error, cancellation
// included: that answer is how an activity learns it is cancelled.
const sdkHeartbeatError = "RecordActivityHeartbeat with error"

// SDKLogger is l for the Temporal SDK (Connection.ClientOptions uses it):
// the SDK's warning for a heartbeat answered "cancelled" is logged at
// debug level instead. A worker cancels runs on purpose — a rescale, a
// preemption, the queued runs of an inline campaign when it continues as
// new — and a warning for each was noise in every worker's log (76 in a
// 100,000-trial campaign). Any other heartbeat error stays a warning.
func SDKLogger(l log.Logger) log.Logger {
	if l == nil {
		return nil
	}
	if _, done := l.(sdkLogger); done {
		return l
	}
	return sdkLogger{l}
}

type sdkLogger struct{ log.Logger }

func (s sdkLogger) Warn(msg string, keyvals ...any) {
	if msg == sdkHeartbeatError && cancellation(keyvals) {
		s.Logger.Debug(msg, keyvals...)
		return
	}
	s.Logger.Warn(msg, keyvals...)
}

// cancellation reports whether keyvals hold a cancellation error.
func cancellation(keyvals []any) bool {
	for _, v := range keyvals {
		var canceled *temporal.CanceledError
		if err, ok := v.(error); ok && errors.As(err, &canceled) {
			return true
		}
	}
	return false
}
