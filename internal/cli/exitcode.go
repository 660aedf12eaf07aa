package cli

import (
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"go.temporal.io/sdk/temporal"

	"github.com/gleaner-hpc/gleaner/client"
)

// Exit codes of the gleaner command, for scripts (docs/cli.md).
const (
	ExitOK       = 0 // success
	ExitFailure  = 1 // anything else: server unreachable, campaign failed, …
	ExitUsage    = 2 // bad flag or argument, invalid configuration or campaign spec
	ExitNotFound = 3 // no campaign or pool of that name
	ExitRejected = 4 // the campaign refused the request (pause of a paused campaign, …)
)

// ExitError is an error with the exit code the process ends with.
type ExitError struct {
	Code int
	Err  error
}

func (e *ExitError) Error() string { return e.Err.Error() }
func (e *ExitError) Unwrap() error { return e.Err }

// withCode gives err an exit code (nil stays nil).
func withCode(code int, err error) error {
	if err == nil {
		return nil
	}
	return &ExitError{Code: code, Err: err}
}

// usageErrorf is an invalid flag, argument or input: exit code 2.
func usageErrorf(format string, args ...any) error {
	return withCode(ExitUsage, fmt.Errorf(format, args...))
}

// cobra's own messages for bad command lines; it has no typed errors.
var cobraUsagePrefixes = []string{
	"unknown command", "unknown flag", "unknown shorthand flag", "invalid argument",
	"flag needs an argument", "bad flag syntax", "required flag", "accepts ",
	"requires at least", "requires at most", "if any flags in the group",
}

// ExitCode is the process exit code for an error returned by Run: 0 for
// nil, the code of an *ExitError, 3 for client.ErrNotFound, 4 for an
// update the campaign rejected, 2 for cobra's usage errors, else 1.
func ExitCode(err error) int {
	if err == nil {
		return ExitOK
	}
	var ee *ExitError
	if errors.As(err, &ee) {
		return ee.Code
	}
	if errors.Is(err, client.ErrNotFound) {
		return ExitNotFound
	}
	msg := err.Error()
	for _, p := range cobraUsagePrefixes {
		if strings.HasPrefix(msg, p) {
			return ExitUsage
		}
	}
	return ExitFailure
}

// flagError makes every flag parsing error of a command exit 2.
func flagError(_ *cobra.Command, err error) error { return withCode(ExitUsage, err) }

// args are cobra argument validators whose errors exit 2.
func exactArgs(n int, what string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) != n {
			return usageErrorf("want %s, got %d argument(s) (usage: %s)", what, len(args), cmd.UseLine())
		}
		return nil
	}
}

func maxArgs(n int, what string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) > n {
			return usageErrorf("want at most %s, got %d arguments (usage: %s)", what, len(args), cmd.UseLine())
		}
		return nil
	}
}

// rejection reports whether err is a campaign's refusal of an update (its
// validator's error comes back as an ApplicationError) and its message.
func rejection(err error) (string, bool) {
	var app *temporal.ApplicationError
	if errors.As(err, &app) {
		return app.Message(), true
	}
	return "", false
}
