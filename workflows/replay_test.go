package workflows

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
)

// TestReplayRecordedHistories replays histories recorded from a real
// campaign (with a preemption and a resume; see
// internal/integration/record_test.go) against the current workflow code.
// A change that would make running workflows non-deterministic fails here;
// an intended change must be versioned (workflow.GetVersion) or, before
// anything runs in production, the histories recorded again.
func TestReplayRecordedHistories(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "histories", "*.json"))
	require.NoError(t, err)
	require.NotEmpty(t, files, "no recorded histories in testdata/histories")
	r := worker.NewWorkflowReplayer()
	r.RegisterWorkflowWithOptions(CampaignWorkflow, workflow.RegisterOptions{Name: CampaignWorkflowName})
	r.RegisterWorkflowWithOptions(TrialWorkflow, workflow.RegisterOptions{Name: TrialWorkflowName})
	r.RegisterWorkflowWithOptions(PoolWorkflow, workflow.RegisterOptions{Name: PoolWorkflowName})
	ids := map[string]string{ // the recorded runs' workflow ids (children's ids derive from them)
		"campaign.json": CampaignWorkflowID("recorded"),
		"trial.json":    TrialWorkflowID(CampaignWorkflowID("recorded"), 1),
		"pool.json":     PoolWorkflowID("recorded"),
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			raw, err := os.Open(f)
			require.NoError(t, err)
			defer raw.Close()
			h, err := client.HistoryFromJSON(raw, client.HistoryJSONOptions{})
			require.NoError(t, err)
			require.NoError(t, r.ReplayWorkflowHistoryWithOptions(nil, h, worker.ReplayWorkflowHistoryOptions{
				OriginalExecution: workflow.Execution{ID: ids[filepath.Base(f)], RunID: h.Events[0].GetWorkflowExecutionStartedEventAttributes().GetOriginalExecutionRunId()},
			}))
		})
	}
}
