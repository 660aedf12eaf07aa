package workflows

import (
	"errors"
	"strings"
	"testing"

	"go.temporal.io/sdk/temporal"

	"github.com/gleaner-hpc/gleaner/hpo"
)

// A campaign records the revision of the searchers' rules it was created
// under, carries it through continue-as-new, and restores its searcher
// under that revision: a state from a newer build's rules is refused by
// name, not searched with rules it was not created under.
func TestCampaignKeepsItsSearchRevision(t *testing.T) {
	in, _ := continued(t)
	if in.State.SearchRevision != hpo.Revision {
		t.Fatalf("carried search revision %d, want this build's %d", in.State.SearchRevision, hpo.Revision)
	}

	in.State.SearchRevision = hpo.Revision + 1
	env := newEnv(newFakeTrials(steadyScript))
	env.ExecuteWorkflow(CampaignWorkflowName, in)
	var appErr *temporal.ApplicationError
	if err := env.GetWorkflowError(); !errors.As(err, &appErr) || appErr.Type() != ErrTypeBadState ||
		!strings.Contains(err.Error(), "revision") {
		t.Fatalf("run with a newer revision: error %v, want %s naming the revision", err, ErrTypeBadState)
	}
}
