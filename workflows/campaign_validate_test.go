package workflows

import (
	"errors"
	"strings"
	"testing"

	"go.temporal.io/sdk/temporal"
)

// A campaign's spec is validated at submission and by its first run, not
// again by the runs it continues as new: a spec that a rule tightened
// since would reject (here a negative resources.batch) fails a new
// campaign, but a running one carries on to its end.
func TestCampaignValidatesItsSpecOnlyInItsFirstRun(t *testing.T) {
	in, _ := continued(t)
	in.Spec.Resources.Batch = -1

	first := newEnv(newFakeTrials(steadyScript))
	first.ExecuteWorkflow(CampaignWorkflowName, CampaignInput{Spec: in.Spec})
	var appErr *temporal.ApplicationError
	if err := first.GetWorkflowError(); !errors.As(err, &appErr) || appErr.Type() != ErrTypeInvalidSpec ||
		!strings.Contains(err.Error(), "resources.batch") {
		t.Fatalf("first run: error %v, want %s naming resources.batch", err, ErrTypeInvalidSpec)
	}

	next := newEnv(newFakeTrials(steadyScript))
	endCarriedTrials(next, in.State)
	next.ExecuteWorkflow(CampaignWorkflowName, in)
	var res CampaignResult
	if err := next.GetWorkflowResult(&res); err != nil {
		t.Fatalf("continued run: %v, want it to run to its end", err)
	}
	if res.State != CampaignCompleted || res.Created != 24 {
		t.Errorf("continued run: %s with %+v, want completed with 24 trials", res.State, res.CampaignCounts)
	}
}
