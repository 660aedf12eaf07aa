package workflows

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// A trainer that ignores its budget is stopped once a report crosses it:
// the trial ends completed (not stopped), holding no nodes, and its final
// report carries what a continuation resumes from.
func TestTrialStopsAtItsBudget(t *testing.T) {
	e := newTrialEnv(t, func(in RunTrialInput, attempt int) (RunTrialResult, error, bool) {
		return RunTrialResult{}, nil, true // trains until stopped
	})
	in := trialInput()
	in.Budget, in.BudgetUnit, in.Stage = 1000, "samples", "rung 0"
	e.assign(time.Second, 1, "n1")
	e.RegisterDelayedCallback(func() {
		e.SignalWorkflow(SignalProgress, Progress{Run: 1, Attempt: 1, Samples: 600, Step: 6, Metrics: map[string]float64{"loss": 0.7}})
	}, 2*time.Second)
	e.RegisterDelayedCallback(func() {
		require.Equal(t, TrialRunning, e.status(t).State, "600 of 1000 samples: still training")
		e.SignalWorkflow(SignalProgress, Progress{Run: 1, Attempt: 1, Samples: 1100, Step: 11, Metrics: map[string]float64{"loss": 0.6},
			Checkpoint: "/ckpt/step-11"})
	}, 3*time.Second)
	e.ExecuteWorkflow(TrialWorkflowName, in)

	r := e.result(t)
	require.Equal(t, TrialCompleted, r.State, "a trial at its budget completed")
	require.Len(t, e.trainer.calls(), 1)
	require.Equal(t, 1000.0, e.trainer.calls()[0].Trial.Budget, "the launch carries the budget")
	require.NotNil(t, r.Resume)
	require.Equal(t, 1100.0, r.Resume.Samples)
	require.Equal(t, int64(11), r.Resume.Step)
	require.Equal(t, "/ckpt/step-11", r.Resume.Checkpoint)
	require.Equal(t, 1, r.Resume.Runs)
	require.NotEmpty(t, r.Resume.Owner)
	require.Equal(t, "rung 0", r.Stage)
	require.Contains(t, e.poolSigs, SignalDeregisterTrial, "a trial at its budget gives its nodes back")
}

// A budget in steps counts the step counter, not samples.
func TestTrialBudgetInSteps(t *testing.T) {
	e := newTrialEnv(t, func(in RunTrialInput, attempt int) (RunTrialResult, error, bool) {
		return RunTrialResult{}, nil, true
	})
	in := trialInput()
	in.Budget, in.BudgetUnit = 10, "steps"
	e.assign(time.Second, 1, "n1")
	e.RegisterDelayedCallback(func() {
		e.SignalWorkflow(SignalProgress, Progress{Run: 1, Attempt: 1, Samples: 5000, Step: 9})
	}, 2*time.Second)
	e.RegisterDelayedCallback(func() {
		require.Equal(t, TrialRunning, e.status(t).State, "5000 samples but 9 of 10 steps: still training")
		e.SignalWorkflow(SignalProgress, Progress{Run: 1, Attempt: 1, Samples: 5600, Step: 10})
	}, 3*time.Second)
	e.ExecuteWorkflow(TrialWorkflowName, in)
	require.Equal(t, TrialCompleted, e.result(t).State)
}

// The next segment of a trial starts from the state its campaign passes:
// its runs number on (run directories are never reused), it resumes from
// the checkpoint, and it keeps the first segment's owner.
func TestTrialSegmentContinuesFromItsResume(t *testing.T) {
	e := newTrialEnv(t, completes(3000))
	in := trialInput()
	res := TrialResume{Owner: "first-run", Samples: 1000, Step: 10, Checkpoint: "/ckpt/step-10", Runs: 2, Restarts: 1}
	st := res.Progress()
	in.State, in.Segment, in.Owner, in.Budget, in.BudgetUnit = &st, 2, res.Owner, 3000, "samples"
	e.assign(time.Second, 1, "n1")
	e.ExecuteWorkflow(TrialWorkflowName, in)

	r := e.result(t)
	require.Equal(t, TrialCompleted, r.State)
	calls := e.trainer.calls()
	require.Len(t, calls, 1)
	require.Equal(t, 3, calls[0].Run, "runs number on from the first segment's")
	require.Equal(t, "/ckpt/step-10", calls[0].ResumeFrom)
	require.Equal(t, "first-run", calls[0].Owner)
	require.Equal(t, 1, r.Restarts)
	require.Equal(t, 2, r.Segment)
	require.NotNil(t, r.Resume)
	require.Equal(t, "first-run", r.Resume.Owner)
}
