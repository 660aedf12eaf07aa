package workflows

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gleaner-hpc/gleaner/jpa"
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
		// A trial that trained long enough on 2 then 1 node to send the
		// pool profiles (TestRecordProfiledTrial).
		"trial-profiled.json": TrialWorkflowID(CampaignWorkflowID("profiled"), 1),
		// A trial of the versions of its end (TestRecordEndedTrial).
		"trial-ended.json": TrialWorkflowID(CampaignWorkflowID("ended"), 1),
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

// The profiled trial's history depends on the trial's JPA tuning: under
// another tuning (a later first estimate) its profile signals come at
// other points and the replay fails. This is why trialProfiler is spelled
// out in the workflow and must be versioned to change, and why jpa's own
// defaults may change freely.
func TestReplayDetectsProfilerTuning(t *testing.T) {
	f, err := os.Open(filepath.Join("testdata", "histories", "trial-profiled.json"))
	require.NoError(t, err)
	defer f.Close()
	h, err := client.HistoryFromJSON(f, client.HistoryJSONOptions{})
	require.NoError(t, err)
	replay := func() error {
		r := worker.NewWorkflowReplayer()
		r.RegisterWorkflowWithOptions(TrialWorkflow, workflow.RegisterOptions{Name: TrialWorkflowName})
		return r.ReplayWorkflowHistoryWithOptions(nil, h, worker.ReplayWorkflowHistoryOptions{
			OriginalExecution: workflow.Execution{ID: TrialWorkflowID(CampaignWorkflowID("profiled"), 1),
				RunID: h.Events[0].GetWorkflowExecutionStartedEventAttributes().GetOriginalExecutionRunId()},
		})
	}
	require.NoError(t, replay(), "the recorded tuning replays")
	pinned := trialProfiler
	t.Cleanup(func() { trialProfiler = pinned })
	trialProfiler = jpa.Config{WarmupIntervals: 5, Window: pinned.Window}
	require.Error(t, replay(), "another warm-up replays the profiled trial identically: the history no longer tests the tuning")
}
