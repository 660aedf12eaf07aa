// Package sdklog is the logger Gleaner gives the Temporal SDK: the one a
// program passes, with one message demoted (Logger).
package sdklog

import (
	"context"
	"errors"

	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/temporal"
)

// heartbeatError is what the Temporal SDK logs, at warning level, for
// every activity heartbeat the server answers with an error, cancellation
// included: that answer is how an activity learns it is cancelled.
const heartbeatError = "RecordActivityHeartbeat with error"

// Logger is l for the Temporal SDK: the SDK's warning for a heartbeat
// answered "cancelled" is logged at debug level instead. A worker cancels
// runs on purpose — a rescale, a preemption, the queued runs of an inline
// campaign when it continues as new — and a warning for each was noise in
// every worker's log (62 in a 20,000-trial campaign). So is the warning
// for a heartbeat whose call was cancelled ("context canceled"): the SDK
// sends the one it held back (its throttle) as the activity ends, with
// the activity's context already cancelled (0 to 10 or more in each
// 200-trial campaign of trial workflows, every trial completed, none
// relaunched). Any other heartbeat error stays a warning. The logger's
// own With and caller depth are kept.
func Logger(l log.Logger) log.Logger {
	if l == nil {
		return nil
	}
	if _, done := l.(demoting); done {
		return l
	}
	return demoting{log.Skip(l, 1)} // its callers are one frame further
}

// demoting is Logger's logger; the embedded one skips demoting's frame.
type demoting struct{ log.Logger }

var (
	_ log.WithLogger      = demoting{}
	_ log.WithSkipCallers = demoting{}
)

func (d demoting) Warn(msg string, keyvals ...any) {
	if msg == heartbeatError && cancellation(keyvals) {
		d.Logger.Debug(msg, keyvals...)
		return
	}
	d.Logger.Warn(msg, keyvals...)
}

func (d demoting) With(keyvals ...any) log.Logger { return demoting{log.With(d.Logger, keyvals...)} }

func (d demoting) WithCallerSkip(depth int) log.Logger { return demoting{log.Skip(d.Logger, depth)} }

// cancellation reports whether keyvals hold a cancellation error: the
// server's answer, or the call's own context cancelled (the gRPC call
// returns it as a serviceerror.Canceled, "context canceled").
func cancellation(keyvals []any) bool {
	for _, v := range keyvals {
		err, ok := v.(error)
		if !ok {
			continue
		}
		var canceled *temporal.CanceledError
		var callCanceled *serviceerror.Canceled
		if errors.As(err, &canceled) || errors.As(err, &callCanceled) || errors.Is(err, context.Canceled) {
			return true
		}
	}
	return false
}
