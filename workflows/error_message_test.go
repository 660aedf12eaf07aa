package workflows

import (
	"errors"
	"testing"

	"go.temporal.io/sdk/temporal"
)

// A failed run's reason is the error's message, its log lines last, with
// no "(type: …, retryable: …)" after them.
func TestErrorMessage(t *testing.T) {
	for _, c := range []struct {
		err  error
		want string
	}{
		{temporal.NewNonRetryableApplicationError("trainer exited with exit code 1 (log: l)\n| boom", "TrainerFailed", nil),
			"trainer exited with exit code 1 (log: l)\n| boom"},
		{temporal.NewApplicationErrorWithCause("could not launch", "LaunchFailed", errors.New("no such file")),
			"could not launch: no such file"},
		{errors.New("plain"), "plain"},
	} {
		if got := errorMessage(c.err); got != c.want {
			t.Errorf("errorMessage(%v) = %q, want %q", c.err, got, c.want)
		}
	}
}
