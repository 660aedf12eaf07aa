package gleaner_test

import (
	"errors"
	"fmt"
	"testing"

	"go.temporal.io/sdk/temporal"

	"github.com/gleaner-hpc/gleaner"
)

// FailedTrialReport finds the final report in a failed trial's error
// without importing Temporal: it names Temporal's application error by
// its methods. These are the errors Temporal hands a client or a parent.
func TestFailedTrialReport(t *testing.T) {
	final := gleaner.TrialReport{TrialID: "t00007", State: gleaner.TrialFailed, Final: true, Error: "exit 3"}
	failed := temporal.NewNonRetryableApplicationError("trial failed", gleaner.ErrTypeTrialFailed, nil, final)
	for _, c := range []struct {
		name string
		err  error
		ok   bool
	}{
		{"the workflow's error", failed, true},
		{"wrapped", fmt.Errorf("child workflow: %w", failed), true},
		{"another application error", temporal.NewNonRetryableApplicationError("x", "InvalidTrial", nil, final), false},
		{"a report that is not final", temporal.NewApplicationError("trial failed", gleaner.ErrTypeTrialFailed,
			gleaner.TrialReport{TrialID: "t00007"}), false},
		{"no details", temporal.NewApplicationError("trial failed", gleaner.ErrTypeTrialFailed), false},
		{"not Temporal's", errors.New("trial failed"), false},
		{"canceled", temporal.NewCanceledError(final), false},
	} {
		r, ok := gleaner.FailedTrialReport(c.err)
		if ok != c.ok || (ok && (r.TrialID != final.TrialID || r.Error != final.Error)) {
			t.Errorf("%s: got %+v, %v; want ok=%v", c.name, r, ok, c.ok)
		}
	}
}
