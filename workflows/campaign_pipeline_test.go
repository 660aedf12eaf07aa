package workflows

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/workflow"

	"github.com/gleaner-hpc/gleaner/hpo"
)

// runsInFlight counts the RunTrial activities started and not yet ended
// in h's environment and keeps the most at once.
type runsInFlight struct {
	mu       sync.Mutex
	now, max int
}

func countRuns(h *inlineHarness) *runsInFlight {
	c := &runsInFlight{}
	h.env.SetOnActivityStartedListener(func(info *activity.Info, _ context.Context, _ converter.EncodedValues) {
		if info.ActivityType.Name != RunTrialActivityName {
			return
		}
		c.mu.Lock()
		defer c.mu.Unlock()
		c.now++
		c.max = max(c.max, c.now)
	})
	h.env.SetOnActivityCompletedListener(func(info *activity.Info, _ converter.EncodedValue, _ error) {
		if info.ActivityType.Name != RunTrialActivityName {
			return
		}
		c.mu.Lock()
		defer c.mu.Unlock()
		c.now--
	})
	return c
}

// Random search's next trial does not wait for results: each run gets the
// next PipelineDepth trials queued behind it on its nodes, each of which
// starts there once the run before it ends (the harness, like the worker, never runs two on one node).
func TestPipelinedCampaignQueuesTheNextTrialBehindEachRun(t *testing.T) {
	h := newInlineHarness(t, 3, 30*time.Millisecond)
	runs := countRuns(h)
	h.env.ExecuteWorkflow(CampaignWorkflowName, inlineSpec(12, 3))
	require.True(t, h.env.IsWorkflowCompleted())
	require.NoError(t, h.env.GetWorkflowError())
	var res CampaignResult
	require.NoError(t, h.env.GetWorkflowResult(&res))
	require.Equal(t, 12, res.Completed)
	require.Len(t, h.launches, 12, "one run per trial")
	require.Equal(t, 3, h.maxRuns, "three nodes, three trainers at most")
	require.Equal(t, 3*(1+PipelineDepth), runs.max, "PipelineDepth runs queued behind each of the three")
	queued := 0
	for i, in := range h.launches {
		if in.After == "" {
			continue
		}
		queued++
		before := slices.IndexFunc(h.launches[:i], func(b RunTrialInput) bool { return RunRef(b.Trial, b.Run) == in.After })
		require.GreaterOrEqual(t, before, 0, "%s is queued behind %s, which did not train before it", in.Trial.TrialID, in.After)
		require.Equal(t, h.launches[before].Nodes, in.Nodes, "queued on the nodes of the run it waits for")
	}
	require.Equal(t, 9, queued, "every trial after the first three was queued behind a run")
	v, err := h.env.QueryWorkflow(QueryStatus)
	require.NoError(t, err)
	var st CampaignStatus
	require.NoError(t, v.Get(&st))
	require.Equal(t, "inline, pipelined 2 deep", st.TrialMode)
	require.Len(t, h.regs, 1)
	require.Equal(t, 3, h.regs[0].MaxNodes, "the pool is asked for max_concurrent trials' nodes, not the queued ones'")
}

// A searcher that learns from results samples each trial with every
// result there is: its campaign does not queue.
func TestCampaignOfALearningSearcherIsNotPipelined(t *testing.T) {
	h := newInlineHarness(t, 3, 30*time.Millisecond)
	runs := countRuns(h)
	in := inlineSpec(8, 3)
	in.Spec.Search.Algorithm = hpo.AlgorithmTPE
	require.False(t, Pipelined(in.Spec.WithDefaults()))
	wide := inlineSpec(8, PipelineMaxConcurrent+1)
	require.False(t, Pipelined(wide.Spec.WithDefaults()), "more than PipelineMaxConcurrent in flight")
	h.env.ExecuteWorkflow(CampaignWorkflowName, in)
	require.True(t, h.env.IsWorkflowCompleted())
	require.NoError(t, h.env.GetWorkflowError())
	var res CampaignResult
	require.NoError(t, h.env.GetWorkflowResult(&res))
	require.Equal(t, 8, res.Completed)
	require.Equal(t, 3, runs.max, "no run waits behind another")
}

// Stopping a pipelined campaign stops the queued runs too: their trials
// end stopped, none trains after the stop.
func TestStoppingAPipelinedCampaignStopsItsQueuedRuns(t *testing.T) {
	h := newInlineHarness(t, 2, time.Hour)
	h.hold = func(int, RunTrialInput) bool { return true }
	var stopped updateResult
	h.env.RegisterDelayedCallback(func() { update(h.env, UpdateStop, &stopped) }, time.Second)
	h.env.ExecuteWorkflow(CampaignWorkflowName, inlineSpec(10, 2))
	require.True(t, h.env.IsWorkflowCompleted())
	require.NoError(t, h.env.GetWorkflowError())
	require.NoError(t, stopped.err)
	var res CampaignResult
	require.NoError(t, h.env.GetWorkflowResult(&res))
	require.Equal(t, CampaignStopped, res.State)
	require.Equal(t, 2*(1+PipelineDepth), res.Stopped, "two training trials and those queued behind them, all stopped")
	require.Equal(t, 0, res.Completed+res.Failed)
	require.Len(t, h.launches, 2, "the queued runs never trained")
}

// A campaign run recorded when one run was queued behind each keeps
// queueing one.
func TestPipelineOfARunRecordedAtDepthOneKeepsIt(t *testing.T) {
	h := newInlineHarness(t, 3, 30*time.Millisecond)
	h.env.OnGetVersion("inline-pipeline", workflow.DefaultVersion, 3).Return(workflow.Version(1))
	runs := countRuns(h)
	h.env.ExecuteWorkflow(CampaignWorkflowName, inlineSpec(12, 3))
	require.True(t, h.env.IsWorkflowCompleted())
	require.NoError(t, h.env.GetWorkflowError())
	require.Equal(t, 6, runs.max, "one run queued behind each of the three")
}

// A pipelined run that drains for continue-as-new lets its training runs
// finish but cancels the queued ones at once: they have not trained, and
// one the server had not handed to a worker held the drain for its whole
// wait while every node sat idle. Their trials start in the next run.
func TestDrainingPipelinedCampaignCancelsItsQueuedRuns(t *testing.T) {
	for _, v := range []workflow.Version{workflow.Version(2), workflow.Version(3)} {
		h := newInlineHarness(t, 2, 300*time.Millisecond)
		h.env.OnGetVersion("inline-pipeline", workflow.DefaultVersion, 3).Return(v)
		h.hold = func(i int, _ RunTrialInput) bool {
			if i == 1 { // both nodes train, their queued runs wait
				h.env.RegisterDelayedCallback(func() { h.env.SetCurrentHistoryLength(500) }, time.Millisecond)
			}
			return false
		}
		in := inlineSpec(12, 2)
		in.HistoryThreshold = 400
		in.Tuning = &Tuning{DrainWait: time.Minute}
		h.env.ExecuteWorkflow(CampaignWorkflowName, in)
		require.True(t, h.env.IsWorkflowCompleted())
		var can *workflow.ContinueAsNewError
		require.ErrorAs(t, h.env.GetWorkflowError(), &can)
		var next CampaignInput
		require.NoError(t, converter.GetDefaultDataConverter().FromPayloads(can.Input, &next))
		if v == 2 {
			require.Greater(t, len(h.launches), 2, "recorded before: the queued runs trained while the run drained")
			continue
		}
		require.Len(t, h.launches, 2, "only the two training runs trained")
		require.Equal(t, 2, next.State.Counts.Completed)
		pending := 0
		for _, tr := range next.State.Inline.Trials {
			require.Equal(t, TrialPending, tr.Progress.State)
			require.Zero(t, tr.Progress.Samples, "%s never trained", tr.Input.TrialID)
			pending++
		}
		require.Equal(t, 2*PipelineDepth, pending, "the queued trials wait for the next run")
	}
}
