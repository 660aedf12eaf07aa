package workflows

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func coreInput() TrialInput {
	return TrialInput{TrialID: "t1", Number: 1, ObjectiveMetric: "loss", MaxRestarts: 2}
}

// The trial workflow and inline trials once disagreed on each of these
// (campaign_inline.go kept per-field maxima, no history, summed every
// failure into restarts, flagged a failed trial's objective missing and
// carried no rescales in Resume): the core decides them once.
func TestTrialCoreAbsorbsTheNewestProgress(t *testing.T) {
	for _, tc := range []struct {
		name     string
		results  []RunTrialResult
		want     TrialProgress
		restarts int
	}{{
		name: "a run with fewer samples keeps only its checkpoint",
		results: []RunTrialResult{
			{Samples: 100, Step: 10, Epoch: 1, Metrics: map[string]float64{"loss": 0.5}},
			{Samples: 60, Step: 6, Epoch: 0.6, Metrics: map[string]float64{"loss": 0.9}, Checkpoint: "/ckpt/6"},
		},
		want: TrialProgress{Samples: 100, Step: 10, Epoch: 1, Metrics: map[string]float64{"loss": 0.5}, Checkpoint: "/ckpt/6",
			ObjectiveSeen: true, History: []MetricPoint{{Samples: 100, Value: 0.5}}},
	}, {
		name: "step and epoch come with their samples, not as separate maxima",
		results: []RunTrialResult{
			{Samples: 100, Step: 50, Epoch: 2},
			{Samples: 120, Step: 12, Epoch: 1.2, Metrics: map[string]float64{"acc": 0.7}},
		},
		want: TrialProgress{Samples: 120, Step: 12, Epoch: 1.2, Metrics: map[string]float64{"acc": 0.7}},
	}, {
		name: "the objective's finite values are its history",
		results: []RunTrialResult{
			{Samples: 10, Metrics: map[string]float64{"loss": math.NaN()}},
			{Samples: 20, Metrics: map[string]float64{"loss": 0.4}},
		},
		want: TrialProgress{Samples: 20, Metrics: map[string]float64{"loss": 0.4}, ObjectiveSeen: true,
			History: []MetricPoint{{Samples: 20, Value: 0.4}}},
	}, {
		name: "restarts: a run's failures up to max_restarts, the one past it ends the trial",
		results: []RunTrialResult{
			{Failures: 1},
			{Failures: 5},
		},
		restarts: 1 + 2,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			b := newTrialCore(coreInput(), "wf")
			for i, r := range tc.results {
				b.absorbResult(i+1, r)
			}
			got := b.p
			tc.want.State, tc.want.Restarts = TrialPending, tc.restarts
			require.Equal(t, tc.want, got)
		})
	}
}

// A running trial's reports repeat its failures so far: each is counted
// once, and a run on several hosts leaves the count to its workflow.
func TestTrialCoreCountsEachFailureOnce(t *testing.T) {
	b := newTrialCore(coreInput(), "wf")
	b.absorbProgress(Progress{Run: 1, Failures: 1})
	b.absorbProgress(Progress{Run: 1, Failures: 1})
	b.absorbResult(1, RunTrialResult{Failures: 2})
	require.Equal(t, 2, b.p.Restarts)
	b.markGroupRun(2)
	b.absorbResult(2, RunTrialResult{Failures: 1})
	require.Equal(t, 2, b.p.Restarts, "a group run's failures are the workflow's to count")
}

func TestTrialCoreFinalReport(t *testing.T) {
	for _, tc := range []struct {
		name    string
		state   TrialState
		seen    bool
		budget  float64
		final   bool
		missing bool
		resume  bool
	}{
		{name: "completed without the objective", state: TrialCompleted, final: true, missing: true},
		{name: "stopped without the objective", state: TrialStopped, final: true, missing: true},
		{name: "a failure says why by itself", state: TrialFailed, final: true},
		{name: "completed with the objective", state: TrialCompleted, seen: true, final: true},
		{name: "not final: nothing missing yet", state: TrialRunning},
		{name: "completed its budget: resumable", state: TrialCompleted, seen: true, budget: 100, final: true, resume: true},
		{name: "stopped before its budget: not resumable", state: TrialStopped, seen: true, budget: 100, final: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := coreInput()
			in.Budget, in.BudgetUnit, in.Stage, in.Segment = tc.budget, "samples", "rung 0", 2
			in.State = &TrialProgress{Samples: 100, Step: 10, Runs: 3, Restarts: 1, Rescales: 2, Checkpoint: "/c", ObjectiveSeen: tc.seen}
			b := newTrialCore(in, "wf-1")
			b.p.State = tc.state
			r := b.report("owner", tc.final)
			require.Equal(t, tc.missing, r.ObjectiveMissing, "objective missing")
			require.Equal(t, "wf-1", r.WorkflowID)
			require.Equal(t, 2, r.Rescales)
			require.Equal(t, "rung 0", r.Stage)
			require.Equal(t, 2, r.Segment)
			if !tc.resume {
				require.Nil(t, r.Resume)
				return
			}
			require.Equal(t, &TrialResume{Owner: "owner", Samples: 100, Step: 10, Checkpoint: "/c", Runs: 3, Restarts: 1, Rescales: 2,
				Seen: true}, r.Resume, "the next segment continues every count, rescales too")
			require.Equal(t, in.State.Rescales, r.Resume.Progress().Rescales)
		})
	}
}

func TestTrialCoreReachesItsBudgetInItsUnit(t *testing.T) {
	for unit, p := range map[string]TrialProgress{
		"samples": {Samples: 1000},
		"steps":   {Step: 1000},
		"epochs":  {Epoch: 1000 * (1 - budgetSlack/2)},
	} {
		in := coreInput()
		in.Budget, in.BudgetUnit, in.State = 1000, unit, &p
		require.True(t, newTrialCore(in, "wf").atBudget(), unit)
		in.State = &TrialProgress{}
		require.False(t, newTrialCore(in, "wf").atBudget(), unit)
	}
}

func TestTrialCoreBoundsItsHistory(t *testing.T) {
	b := newTrialCore(coreInput(), "wf")
	for i := 1; i <= 3*metricHistoryLen; i++ {
		b.absorb(float64(i), int64(i), 0, map[string]float64{"loss": 1 / float64(i)}, "")
	}
	require.LessOrEqual(t, len(b.p.History), metricHistoryLen)
	require.Equal(t, 1.0, b.p.History[0].Samples, "the window spans the whole run")
	require.Equal(t, float64(3*metricHistoryLen), b.p.History[len(b.p.History)-1].Samples)
}

// A state carried from before ObjectiveSeen existed counts the objective
// seen if its metrics or history hold it; its nodes are not carried.
func TestTrialCoreCarriesItsState(t *testing.T) {
	in := coreInput()
	in.State = &TrialProgress{State: TrialRunning, Samples: 5, Metrics: map[string]float64{"loss": 1}, Nodes: []string{"n1"}}
	b := newTrialCore(in, "wf")
	require.True(t, b.p.ObjectiveSeen)
	require.Nil(t, b.p.Nodes)
	require.Nil(t, b.in.State)
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	require.Equal(t, 1, b.launched(now, []string{"n2"}, false, false))
	require.Equal(t, 2, b.launched(now.Add(time.Second), []string{"n2", "n3"}, true, false))
	require.Equal(t, 1, b.p.Rescales)
	b.end(now.Add(2*time.Second), TrialFailed, "boom")
	require.Equal(t, TrialFailed, b.p.State)
	require.Equal(t, "boom", b.p.Error)
	require.Nil(t, b.p.Nodes)
}
