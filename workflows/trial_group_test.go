package workflows

import (
	"errors"
	"testing"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/temporal"
)

// A trial that can never run fails whichever rank found out (a rank on a
// host whose --allow-command refuses the trainer): no relaunch.
func TestGroupResultFailsAnInvalidTrialFromAnyRank(t *testing.T) {
	in := RunTrialInput{Hosts: []HostNodes{{Agent: "a"}, {Agent: "b"}}}
	refused := temporal.NewNonRetryableApplicationError("trainer \"/bin/sh\" is not allowed on this host: add it with --allow-command", ErrTypeInvalidTrial, nil)
	for first := range 2 {
		errs := []error{nil, nil}
		errs[first] = refused
		_, err := groupResult(in, first, RunTrialResult{}, errs)
		var app *temporal.ApplicationError
		if !errors.As(err, &app) || app.Type() != ErrTypeInvalidTrial {
			t.Errorf("rank %d refused: error %v, want %s", first, err, ErrTypeInvalidTrial)
		}
	}
}

func TestGroupResultNamesTheRankThatEndedTheRun(t *testing.T) {
	in := RunTrialInput{Hosts: []HostNodes{{Agent: "a"}, {Agent: "b"}, {Agent: "c"}}}
	res := RunTrialResult{Outcome: RunStopped, Samples: 42}
	failed := temporal.NewApplicationError("trainer exited with exit code 3", "TrainerFailed")
	lost := temporal.NewTimeoutError(enumspb.TIMEOUT_TYPE_HEARTBEAT, nil)
	for _, tc := range []struct {
		name     string
		first    int
		errs     []error
		wantType string // "" = no error
	}{
		{"rank 0 finished", 0, []error{nil, nil, nil}, ""},
		{"rank 1 failed", 1, []error{nil, failed, nil}, ErrTypeRankFailed},
		{"rank 2's host lost", 2, []error{nil, nil, lost}, ErrTypeHostLost},
		{"rank 0 failed", 0, []error{failed, nil, nil}, ErrTypeRankFailed},
		{"rank 0's host lost", 0, []error{lost, nil, nil}, ErrTypeHostLost},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := groupResult(in, tc.first, res, tc.errs)
			var app *temporal.ApplicationError
			switch {
			case tc.wantType == "" && (err != nil || got.Samples != 42):
				t.Errorf("got %+v, %v; want rank 0's result", got, err)
			case tc.wantType != "" && (!errors.As(err, &app) || app.Type() != tc.wantType || !app.NonRetryable()):
				t.Errorf("error %v, want a non-retryable %s", err, tc.wantType)
			case tc.wantType != "":
				var details RunTrialResult
				if app.Details(&details) != nil || details.Samples != 42 {
					t.Errorf("details %+v, want rank 0's result", details)
				}
				if want := "rank " + string(rune('0'+tc.first)) + " (agent " + in.Hosts[tc.first].Agent + ")"; len(app.Error()) < len(want) || app.Error()[:len(want)] != want {
					t.Errorf("message %q does not start with %q", app.Error(), want)
				}
			}
		})
	}
	// Cancelled before it started: the trial stopped the run.
	canceled := temporal.NewCanceledError()
	if _, err := groupResult(in, 1, RunTrialResult{}, []error{canceled, canceled, nil}); !errors.As(err, new(*temporal.CanceledError)) {
		t.Errorf("a cancelled group: %v, want the cancellation", err)
	}
}
