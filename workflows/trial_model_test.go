package workflows

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// The trainer says what it trains in its reports; the trial tells the
// pool with its profile (the campaign's resources.batch winning over the
// trainer's), also when the estimate has not moved, and keeps it across
// continue-as-new (TrialProgress).
func TestTrialTellsPoolTheReportedModel(t *testing.T) {
	e := newTrialEnv(t, func(RunTrialInput, int) (RunTrialResult, error, bool) { return RunTrialResult{}, nil, true })
	e.assign(time.Second, 1, "n1", "n2")
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range 12 {
		pr := Progress{Run: 1, Attempt: 1, Nodes: 2, Samples: float64(200 * i), Time: base.Add(time.Duration(i) * time.Second)}
		if i >= 8 { // the trainer names its model only once its estimate is steady
			pr.Model, pr.Batch = "resnet50", 64
		}
		e.RegisterDelayedCallback(func() { e.SignalWorkflow(SignalProgress, pr) }, time.Second+time.Duration(i+1)*100*time.Millisecond)
	}
	e.RegisterDelayedCallback(func() {
		s := e.status(t)
		require.Equal(t, "resnet50", s.Model)
		require.Equal(t, 64, s.Batch)
		e.SignalWorkflow(SignalControl, Control{Action: ControlStop})
	}, 3*time.Second)
	in := trialInput()
	in.Batch = 32 // the campaign's resources.batch
	e.ExecuteWorkflow(TrialWorkflowName, in)
	require.Equal(t, TrialStopped, e.result(t).State)
	require.NotEmpty(t, e.profiles)
	first, last := e.profiles[0], e.profiles[len(e.profiles)-1]
	require.Equal(t, "", first.Model, "the first profile went out before the trainer named its model")
	require.Equal(t, 32, first.Batch, "the campaign's batch")
	require.Equal(t, "resnet50", last.Model, "naming the model sends a profile, though the estimate did not move")
	require.Equal(t, 32, last.Batch, "the campaign's batch wins over the trainer's")
	require.Equal(t, first.Throughput, last.Throughput)
	require.Equal(t, "", e.lastReg.Model, "registered before the trainer said")
}
